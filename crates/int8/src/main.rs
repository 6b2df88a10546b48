//! `ai-smartness-int8 MODEL OUT`: writes MODEL's graph rewritten to multiply in 8 bits to OUT
//! (through a temporary file renamed into place, so OUT is whole or absent).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [model, out] = args.as_slice() else {
        eprintln!("usage: ai-smartness-int8 MODEL.onnx OUT.onnx");
        return ExitCode::from(2);
    };
    match run(model, out) {
        Ok(summary) => {
            println!("{summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ai-smartness-int8: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(model: &PathBuf, out: &PathBuf) -> Result<String, String> {
    let bytes = std::fs::read(model).map_err(|e| format!("{}: {e}", model.display()))?;
    let rewritten = ai_smartness_int8::quantize_products(&bytes)
        .map_err(|e| format!("{}: {e}", model.display()))?;
    let mut partial = out.clone().into_os_string();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    std::fs::write(&partial, &rewritten.model)
        .and_then(|()| std::fs::rename(&partial, out))
        .map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(format!(
        "{}: {} products and {} gathers in 8 bits",
        out.display(),
        rewritten.products,
        rewritten.gathers
    ))
}
