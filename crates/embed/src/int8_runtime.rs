//! The 8-bit rewrite run by ONNX Runtime: what it computes against what the f32 graph computes.

use ai_smartness_int8::quantize_products;
use ai_smartness_int8::tests::{tiny_model, weight};
use ort::session::Session;
use ort::value::Tensor as OrtTensor;

/// `y` and `e` of a test model for `x` (`n × rows`) and `ids`.
fn run(
    environment: &ort::environment::Environment,
    model: &[u8],
    x: &[f32],
    rows: usize,
    ids: &[i64],
) -> (Vec<f32>, Vec<f32>) {
    let mut session = Session::builder(environment)
        .unwrap()
        .commit_from_memory(model)
        .unwrap();
    let n = x.len() / rows;
    let x = OrtTensor::from_array((vec![n as i64, rows as i64], x.to_vec())).unwrap();
    let ids = OrtTensor::from_array((vec![ids.len() as i64], ids.to_vec())).unwrap();
    let outputs = session.run(ort::inputs!["x" => x, "ids" => ids]).unwrap();
    let y = outputs["y"].try_extract_tensor::<f32>().unwrap().1.to_vec();
    let e = outputs["e"].try_extract_tensor::<f32>().unwrap().1.to_vec();
    (y, e)
}

#[test]
fn integer_products_give_the_f32_products_within_quantization_error() {
    let Ok(paths) = crate::locate(&crate::data_dir()) else {
        // Under CI a missing model is a failure: CI must test the real one.
        let ci =
            std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false" | "FALSE"));
        assert!(!ci, "the embedding assets are missing and CI is set");
        println!("SKIPPED: the embedding assets are not installed");
        return;
    };
    let environment = crate::onnx::ort_environment(&paths.ort_library).unwrap();
    // Few inputs and many (4 in, 6 out; 48 in, 3 out); rows of very different ranges, one
    // all negative, one all zero.
    for (rows, cols) in [(4, 6), (48, 3)] {
        let model = tiny_model(rows, cols, 17);
        let rewritten = quantize_products(&model).unwrap().model;
        let x: Vec<f32> = (0..5 * rows)
            .map(|i| {
                let row = i / rows;
                let v = ((i * 7919) % 101) as f32 / 50.0 - 1.0;
                match row {
                    0 => v * 100.0,
                    1 => v - 3.0,
                    2 => 0.0,
                    _ => v * 0.01,
                }
            })
            .collect();
        let ids = [4, 0, 2, 2];
        let (y, e) = run(&environment, &model, &x, rows, &ids);
        let (yq, eq) = run(&environment, &rewritten, &x, rows, &ids);
        assert_eq!(e, eq, "gathered rows are scaled exactly as before");
        assert_eq!(y.len(), yq.len());
        // Rounding moves each input by at most half a step; a product can move by that
        // times the sum of its column's |weights| (plus f32 rounding).
        let w: Vec<f32> = weight(rows, cols)
            .iter()
            .enumerate()
            .map(|(i, &b)| f32::from(b as i8) * (0.01 + 0.005 * (i % cols) as f32))
            .collect();
        let column_sum = |c: usize| (0..rows).map(|k| w[k * cols + c].abs()).sum::<f32>();
        let range = |xs: &[f32]| {
            let hi = xs.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
            let lo = xs.iter().fold(f32::INFINITY, |m, &v| m.min(v));
            hi - lo
        };
        for r in 0..5 {
            let step = range(&x[r * rows..(r + 1) * rows]) / 255.0;
            for c in 0..cols {
                let (a, b) = (y[r * cols + c], yq[r * cols + c]);
                let bound = step / 2.0 * column_sum(c) * 1.001 + 1e-3;
                assert!(
                    (a - b).abs() <= bound,
                    "{rows}x{cols}, row {r}, column {c}: {a} vs {b} (bound {bound})"
                );
            }
        }
        {
            // A row of small values keeps its own precision.
            let small = &y[3 * cols..4 * cols];
            let small_q = &yq[3 * cols..4 * cols];
            let worst = small
                .iter()
                .zip(small_q)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            let size = small.iter().fold(0f32, |m, v| m.max(v.abs()));
            assert!(worst <= 0.05 * size, "{worst} against values up to {size}");
        }
    }
}
