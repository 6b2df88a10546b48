//! The model's matrix products in 8-bit integers.
//!
//! The installed all-MiniLM-L6-v2 keeps its weights as int8 with a scale per column or per row
//! (`Cast` then `Mul` in its graph), and ONNX Runtime folds them into f32 tensors when it loads
//! the model: ~90 MB of f32 weights, multiplied in f32. [`quantize_products`] rewrites the graph
//! once, when the assets are installed (`scripts/fetch-assets.sh` runs this crate's
//! `ai-smartness-int8` and checks the result against its pinned hash), and the daemon loads the
//! rewritten file, so the weights stay in 8 bits (~22 MB) and a prompt's pass is faster:
//! - each `MatMul` by such a weight multiplies integers (`MatMulInteger`). Its activations are
//!   quantized on the fly, each row (token) shifted by its minimum and cut in 256 steps of its
//!   own: a text's vector then depends on that text alone, never on the texts batched with it
//!   nor on their padding, and one token's outliers (the special tokens have large ones) cost
//!   the other tokens nothing. One range for the whole tensor (`DynamicQuantizeLinear`, which
//!   ONNX Runtime fuses into one op) was ~1.5 ms faster per prompt but gave a short text a
//!   cosine of 0.978 to its f32 vector, and different vectors alone and in a batch;
//! - each `Gather` from such a table (the word and position embeddings) gathers int8 rows and
//!   scales what it gathered.
//!
//! The weights go to `MatMulInteger` as `u8` with a zero point of 128: ONNX Runtime's `u8 × s8`
//! kernel on AVX2 saturates its 16-bit pair sums, `u8 × u8` does not.
//!
//! The graph is edited at the protobuf level ([`wire`]): nodes and initializers that are not
//! rewritten are copied byte for byte, and anything unexpected leaves the model as it was.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

/// Why a model was left as it was.
#[derive(Debug, thiserror::Error)]
pub enum RewriteError {
    #[error("not a model this rewrite understands: {0}")]
    Malformed(&'static str),
    #[error("no int8 weight feeds a matrix product")]
    NothingToRewrite,
    #[error("the graph already uses the name {0}")]
    NameTaken(String),
}

/// A rewritten model and what was rewritten.
#[derive(Debug)]
pub struct Rewritten {
    /// The new model file.
    pub model: Vec<u8>,
    /// Matrix products now done in integers (36 for all-MiniLM-L6-v2: 6 per layer).
    pub products: usize,
    /// Embedding lookups that now gather int8 rows.
    pub gathers: usize,
}

/// ONNX `TensorProto.DataType` values used here.
const FLOAT: i64 = 1;
const UINT8: i64 = 2;
const INT8: i64 = 3;
const INT64: i64 = 7;

/// Prefix of every name this rewrite adds, checked against the graph's own names.
const PREFIX: &str = "ai_smartness_q8";

/// `model` (an ONNX `ModelProto`) with its int8 weights multiplied in 8 bits.
pub fn quantize_products(model: &[u8]) -> Result<Rewritten, RewriteError> {
    let mut graph = None;
    let mut opset = None;
    for field in wire::fields(model) {
        let field = field?;
        match field.number {
            // ModelProto.graph
            7 => graph = Some(field.bytes()?),
            // ModelProto.opset_import: OperatorSetIdProto { domain = 1, version = 2 }
            8 => {
                let mut domain = "";
                let mut version = 0;
                for f in wire::fields(field.bytes()?) {
                    let f = f?;
                    match f.number {
                        1 => domain = f.str()?,
                        2 => version = f.int()?,
                        _ => {}
                    }
                }
                if domain.is_empty() || domain == "ai.onnx" {
                    opset = Some(version);
                }
            }
            _ => {}
        }
    }
    let graph = graph.ok_or(RewriteError::Malformed("no graph"))?;
    let opset = opset.ok_or(RewriteError::Malformed("no ONNX opset"))?;
    // Round is opset 11; `axes` of ReduceMin/Max is an attribute up to 17, an input from 18.
    if opset < 13 {
        return Err(RewriteError::Malformed("opset older than 13"));
    }
    let rewrite = Graph::parse(graph)?.rewrite(opset)?;

    // The graph's field changes size: its new key and length take at most 11 bytes.
    let mut out = Vec::with_capacity(model.len() - graph.len() + rewrite.graph.len() + 11);
    for field in wire::fields(model) {
        let field = field?;
        if field.number == 7 {
            wire::put_bytes(&mut out, 7, &rewrite.graph);
        } else {
            out.extend_from_slice(field.raw);
        }
    }
    Ok(Rewritten {
        model: out,
        products: rewrite.products,
        gathers: rewrite.gathers,
    })
}

/// A node of the graph: read from the model (written back as it was) or made here.
struct Node<'a> {
    op: Cow<'a, str>,
    domain: &'a str,
    inputs: Vec<Cow<'a, str>>,
    outputs: Vec<Cow<'a, str>>,
    /// Integer attributes read (`to` of a Cast, `axis` of a Gather) or to write.
    attributes: Vec<(&'static str, Attribute)>,
    /// The original `NodeProto`, `None` for a node made here.
    raw: Option<&'a [u8]>,
}

#[derive(Clone, Debug, PartialEq)]
enum Attribute {
    Int(i64),
    Ints(Vec<i64>),
}

impl<'a> Node<'a> {
    fn new(op: &'static str, inputs: &[&str], outputs: &[&str]) -> Node<'a> {
        Node {
            op: Cow::Borrowed(op),
            domain: "",
            inputs: inputs.iter().map(|s| Cow::Owned(s.to_string())).collect(),
            outputs: outputs.iter().map(|s| Cow::Owned(s.to_string())).collect(),
            attributes: Vec::new(),
            raw: None,
        }
    }

    fn with(mut self, name: &'static str, value: Attribute) -> Node<'a> {
        self.attributes.push((name, value));
        self
    }

    fn int(&self, name: &str) -> Option<i64> {
        self.attributes.iter().find_map(|(n, v)| match v {
            Attribute::Int(i) if *n == name => Some(*i),
            _ => None,
        })
    }

    fn parse(raw: &'a [u8]) -> Result<Node<'a>, RewriteError> {
        let mut node = Node {
            op: Cow::Borrowed(""),
            domain: "",
            inputs: Vec::new(),
            outputs: Vec::new(),
            attributes: Vec::new(),
            raw: Some(raw),
        };
        for field in wire::fields(raw) {
            let field = field?;
            match field.number {
                1 => node.inputs.push(Cow::Borrowed(field.str()?)),
                2 => node.outputs.push(Cow::Borrowed(field.str()?)),
                4 => node.op = Cow::Borrowed(field.str()?),
                7 => node.domain = field.str()?,
                // AttributeProto { name = 1, i = 3 }: only the integer ones matter here.
                5 => {
                    let mut name = "";
                    let mut int = None;
                    for f in wire::fields(field.bytes()?) {
                        let f = f?;
                        match f.number {
                            1 => name = f.str()?,
                            3 => int = Some(f.int()?),
                            // A subgraph (If, Loop) reads names its node does not list as
                            // inputs: removing unused nodes could break it.
                            6 | 11 => return Err(RewriteError::Malformed("a subgraph")),
                            _ => {}
                        }
                    }
                    let known = ["to", "axis"].into_iter().find(|n| *n == name);
                    if let (Some(name), Some(i)) = (known, int) {
                        node.attributes.push((name, Attribute::Int(i)));
                    }
                }
                _ => {}
            }
        }
        Ok(node)
    }

    fn is(&self, op: &str) -> bool {
        self.op == op && (self.domain.is_empty() || self.domain == "ai.onnx")
    }

    fn encode(&self, out: &mut Vec<u8>) {
        if let Some(raw) = self.raw {
            wire::put_bytes(out, 1, raw);
            return;
        }
        let mut node = Vec::new();
        for input in &self.inputs {
            wire::put_bytes(&mut node, 1, input.as_bytes());
        }
        for output in &self.outputs {
            wire::put_bytes(&mut node, 2, output.as_bytes());
        }
        wire::put_bytes(&mut node, 4, self.op.as_bytes());
        for (name, value) in &self.attributes {
            // AttributeProto { name = 1, i = 3, ints = 8, type = 20 (INT = 2, INTS = 7) }
            let mut attribute = Vec::new();
            wire::put_bytes(&mut attribute, 1, name.as_bytes());
            match value {
                Attribute::Int(i) => {
                    wire::put_int(&mut attribute, 3, *i);
                    wire::put_int(&mut attribute, 20, 2);
                }
                Attribute::Ints(list) => {
                    for i in list {
                        wire::put_int(&mut attribute, 8, *i);
                    }
                    wire::put_int(&mut attribute, 20, 7);
                }
            }
            wire::put_bytes(&mut node, 5, &attribute);
        }
        wire::put_bytes(out, 1, &node);
    }
}

/// An initializer: read from the model (written back as it was) or made here.
struct Tensor<'a> {
    name: Cow<'a, str>,
    data_type: i64,
    dims: Vec<i64>,
    /// `raw_data`, the only storage read here (int8 weights and float scales use it).
    data: Option<Cow<'a, [u8]>>,
    /// The original `TensorProto`, `None` for a tensor made here.
    raw: Option<&'a [u8]>,
}

impl<'a> Tensor<'a> {
    fn new(name: String, data_type: i64, dims: Vec<i64>, data: Vec<u8>) -> Tensor<'a> {
        Tensor {
            name: Cow::Owned(name),
            data_type,
            dims,
            data: Some(Cow::Owned(data)),
            raw: None,
        }
    }

    fn parse(raw: &'a [u8]) -> Result<Tensor<'a>, RewriteError> {
        let mut tensor = Tensor {
            name: Cow::Borrowed(""),
            data_type: 0,
            dims: Vec::new(),
            data: None,
            raw: Some(raw),
        };
        for field in wire::fields(raw) {
            let field = field?;
            match field.number {
                1 => match field.value {
                    wire::Value::Bytes(packed) => {
                        for d in wire::varints(packed) {
                            tensor.dims.push(d? as i64);
                        }
                    }
                    _ => tensor.dims.push(field.int()?),
                },
                2 => tensor.data_type = field.int()?,
                8 => tensor.name = Cow::Borrowed(field.str()?),
                9 => tensor.data = Some(Cow::Borrowed(field.bytes()?)),
                _ => {}
            }
        }
        Ok(tensor)
    }

    fn len(&self) -> Option<usize> {
        self.dims
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?))
    }

    /// The values of a float tensor stored as `raw_data` (little-endian).
    fn floats(&self) -> Option<Vec<f32>> {
        let data = self.data.as_deref()?;
        (self.data_type == FLOAT && data.len() == self.len()? * 4).then(|| {
            data.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        if let Some(raw) = self.raw {
            wire::put_bytes(out, 5, raw);
            return;
        }
        // TensorProto { dims = 1, data_type = 2, name = 8, raw_data = 9 }
        let mut tensor = Vec::new();
        for &d in &self.dims {
            wire::put_int(&mut tensor, 1, d);
        }
        wire::put_int(&mut tensor, 2, self.data_type);
        wire::put_bytes(&mut tensor, 8, self.name.as_bytes());
        wire::put_bytes(&mut tensor, 9, self.data.as_deref().unwrap_or_default());
        wire::put_bytes(out, 5, &tensor);
    }
}

/// A weight stored as int8 and scaled back to f32 by the graph: `Mul(Cast(weight), scale)`.
struct Int8Weight<'g> {
    /// The int8 initializer, `rows × cols`.
    weight: &'g str,
    /// Its values, row after row.
    data: &'g [u8],
    /// The f32 scale initializer: `[1, cols]` or `[cols]` (per column) or `[rows, 1]` (per row).
    scale: &'g str,
    /// Its values.
    scales: Vec<f32>,
    rows: usize,
    cols: usize,
    per_row_scale: bool,
}

struct Graph<'a> {
    nodes: Vec<Node<'a>>,
    tensors: Vec<Tensor<'a>>,
    /// Names the graph hands out (its outputs) and takes in (its inputs): never removed.
    outputs: Vec<&'a str>,
    inputs: Vec<&'a str>,
    /// The other `GraphProto` fields, copied as they were (`value_info`, shapes the exporter
    /// inferred, is dropped: it names values this rewrite removes, and is optional).
    other: Vec<&'a [u8]>,
}

struct Rewrite {
    graph: Vec<u8>,
    products: usize,
    gathers: usize,
}

impl<'a> Graph<'a> {
    fn parse(bytes: &'a [u8]) -> Result<Graph<'a>, RewriteError> {
        let mut graph = Graph {
            nodes: Vec::new(),
            tensors: Vec::new(),
            outputs: Vec::new(),
            inputs: Vec::new(),
            other: Vec::new(),
        };
        // ValueInfoProto { name = 1 }
        let name_of = |bytes: &'a [u8]| -> Result<&'a str, RewriteError> {
            for f in wire::fields(bytes) {
                let f = f?;
                if f.number == 1 {
                    return f.str();
                }
            }
            Err(RewriteError::Malformed(
                "a graph input or output has no name",
            ))
        };
        for field in wire::fields(bytes) {
            let field = field?;
            match field.number {
                1 => graph.nodes.push(Node::parse(field.bytes()?)?),
                5 => graph.tensors.push(Tensor::parse(field.bytes()?)?),
                // Sparse initializers would need reading to know what they hold.
                15 => return Err(RewriteError::Malformed("sparse initializers")),
                11 => {
                    graph.inputs.push(name_of(field.bytes()?)?);
                    graph.other.push(field.raw);
                }
                12 => {
                    graph.outputs.push(name_of(field.bytes()?)?);
                    graph.other.push(field.raw);
                }
                13 => {}
                _ => graph.other.push(field.raw),
            }
        }
        Ok(graph)
    }

    fn rewrite(mut self, opset: i64) -> Result<Rewrite, RewriteError> {
        let taken: HashSet<&str> = self
            .nodes
            .iter()
            .flat_map(|n| n.outputs.iter().map(|o| o.as_ref()))
            .chain(self.tensors.iter().map(|t| t.name.as_ref()))
            .chain(self.inputs.iter().copied())
            .collect();
        if let Some(name) = taken.iter().find(|n| n.starts_with(PREFIX)) {
            return Err(RewriteError::NameTaken(name.to_string()));
        }

        let producer: HashMap<&str, usize> = self
            .nodes
            .iter()
            .enumerate()
            .flat_map(|(i, n)| n.outputs.iter().map(move |o| (o.as_ref(), i)))
            .collect();
        let tensor: HashMap<&str, usize> = self
            .tensors
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.as_ref(), i))
            .collect();

        let mut nodes = Vec::with_capacity(self.nodes.len() * 2);
        let mut added = Vec::new();
        let mut u8_weights: HashMap<String, String> = HashMap::new();
        let (mut products, mut gathers) = (0, 0);
        // Input name → the node index naming its quantized rows.
        let mut quantized: HashMap<String, usize> = HashMap::new();
        let constant = |name: &str| format!("{PREFIX}/{name}");

        for (index, node) in self.nodes.iter().enumerate() {
            let weight_of =
                |name: &str| int8_weight(&self.nodes, &self.tensors, &producer, &tensor, name);
            if node.is("MatMul") && node.inputs.len() == 2 && node.outputs.len() == 1 {
                if let Some(w) = weight_of(&node.inputs[1]).filter(|w| !w.per_row_scale) {
                    let wu8 = u8_weights
                        .entry(w.weight.to_string())
                        .or_insert_with(|| {
                            let name = format!("{PREFIX}/{}/u8", w.weight);
                            let data = w.data.iter().map(|b| b ^ 0x80).collect();
                            added.push(Tensor::new(
                                name.clone(),
                                UINT8,
                                vec![w.rows as i64, w.cols as i64],
                                data,
                            ));
                            name
                        })
                        .clone();
                    let a = node.inputs[0].as_ref();
                    let out = node.outputs[0].as_ref();
                    let v = |suffix: &str| format!("{PREFIX}/{index}/{suffix}");
                    // Σ_k w[k][n] · scale[n]: what shifting a row by its minimum takes back.
                    let mut sums = vec![0f32; w.cols];
                    for row in w.data.chunks_exact(w.cols) {
                        for (s, &b) in sums.iter_mut().zip(row) {
                            *s += f32::from(b as i8);
                        }
                    }
                    let sums: Vec<u8> = sums
                        .iter()
                        .zip(&w.scales)
                        .flat_map(|(s, k)| (s * k).to_le_bytes())
                        .collect();
                    let column_sums = v("column_sums");
                    added.push(Tensor::new(
                        column_sums.clone(),
                        FLOAT,
                        vec![w.cols as i64],
                        sums,
                    ));
                    // Each row (token) of `a`, shifted by its minimum, in 256 steps of its own:
                    // made once for the products sharing `a` (a layer's Q, K and V).
                    let q = *quantized.entry(a.to_string()).or_insert_with(|| {
                        let reduce = |op: &'static str, input: &str, output: &str| {
                            let n = Node::new(op, &[input], &[output])
                                .with("keepdims", Attribute::Int(1));
                            if opset >= 18 {
                                let mut n = n;
                                n.inputs.push(Cow::Owned(constant("last_axis")));
                                n
                            } else {
                                n.with("axes", Attribute::Ints(vec![-1]))
                            }
                        };
                        nodes.extend([
                            reduce("ReduceMin", a, &v("row_min")),
                            Node::new("Sub", &[a, &v("row_min")], &[&v("shifted")]),
                            reduce("ReduceMax", &v("shifted"), &v("row_range")),
                            Node::new(
                                "Div",
                                &[&v("row_range"), &constant("u8_max")],
                                &[&v("row_step0")],
                            ),
                            Node::new(
                                "Max",
                                &[&v("row_step0"), &constant("tiny")],
                                &[&v("row_step")],
                            ),
                            Node::new("Div", &[&v("shifted"), &v("row_step")], &[&v("steps")]),
                            Node::new("Round", &[&v("steps")], &[&v("rounded")]),
                            Node::new("Cast", &[&v("rounded")], &[&v("a_u8")])
                                .with("to", Attribute::Int(UINT8)),
                        ]);
                        index
                    });
                    let qv = |suffix: &str| format!("{PREFIX}/{q}/{suffix}");
                    nodes.extend([
                        Node::new(
                            "MatMulInteger",
                            &[
                                &qv("a_u8"),
                                &wu8,
                                &constant("zero_u8"),
                                &constant("zero_128"),
                            ],
                            &[&v("product")],
                        ),
                        Node::new("Cast", &[&v("product")], &[&v("product_f32")])
                            .with("to", Attribute::Int(FLOAT)),
                        Node::new(
                            "Mul",
                            &[&v("product_f32"), &qv("row_step")],
                            &[&v("by_row")],
                        ),
                        Node::new("Mul", &[&v("by_row"), w.scale], &[&v("unshifted")]),
                        Node::new("Mul", &[&qv("row_min"), &column_sums], &[&v("shift_back")]),
                        Node::new("Add", &[&v("unshifted"), &v("shift_back")], &[out]),
                    ]);
                    products += 1;
                    continue;
                }
            }
            if node.is("Gather")
                && node.inputs.len() == 2
                && node.outputs.len() == 1
                && node.int("axis").unwrap_or(0) == 0
            {
                if let Some(w) = weight_of(&node.inputs[0]) {
                    let ids = node.inputs[1].as_ref();
                    let out = node.outputs[0].as_ref();
                    let v = |suffix: &str| format!("{PREFIX}/{index}/{suffix}");
                    nodes.push(Node::new("Gather", &[w.weight, ids], &[&v("rows_i8")]));
                    nodes.push(
                        Node::new("Cast", &[&v("rows_i8")], &[&v("rows")])
                            .with("to", Attribute::Int(FLOAT)),
                    );
                    if w.per_row_scale {
                        nodes.push(Node::new("Gather", &[w.scale, ids], &[&v("row_scales")]));
                        nodes.push(Node::new("Mul", &[&v("rows"), &v("row_scales")], &[out]));
                    } else {
                        nodes.push(Node::new("Mul", &[&v("rows"), w.scale], &[out]));
                    }
                    gathers += 1;
                    continue;
                }
            }
            nodes.push(Node {
                op: node.op.clone(),
                domain: node.domain,
                inputs: node.inputs.clone(),
                outputs: node.outputs.clone(),
                attributes: node.attributes.clone(),
                raw: node.raw,
            });
        }
        if products == 0 {
            return Err(RewriteError::NothingToRewrite);
        }
        // Shared by every product.
        added.push(Tensor::new(constant("zero_128"), UINT8, vec![], vec![128]));
        added.push(Tensor::new(constant("zero_u8"), UINT8, vec![], vec![0]));
        added.push(Tensor::new(
            constant("u8_max"),
            FLOAT,
            vec![],
            255f32.to_le_bytes().to_vec(),
        ));
        // A row of zeros gets this scale instead of 0, which would divide by zero.
        added.push(Tensor::new(
            constant("tiny"),
            FLOAT,
            vec![],
            1e-12f32.to_le_bytes().to_vec(),
        ));
        added.push(Tensor::new(
            constant("last_axis"),
            INT64,
            vec![1],
            (-1i64).to_le_bytes().to_vec(),
        ));

        // Drop what no longer feeds anything: the Cast and Mul that made f32 weights, the int8
        // weights now given as u8, and constants a path did not use.
        // Nodes come in topological order, so one pass from the end finds them all; the loop
        // only guards against a graph that is not.
        let mut live: HashSet<String> = self.outputs.iter().map(|s| s.to_string()).collect();
        let mut keep = vec![false; nodes.len()];
        loop {
            let mut changed = false;
            for (i, node) in nodes.iter().enumerate().rev() {
                if !keep[i] && node.outputs.iter().any(|o| live.contains(o.as_ref())) {
                    keep[i] = true;
                    changed = true;
                    live.extend(node.inputs.iter().map(|s| s.to_string()));
                }
            }
            if !changed {
                break;
            }
        }
        let mut graph = Vec::new();
        for (node, keep) in nodes.iter().zip(&keep) {
            if *keep {
                node.encode(&mut graph);
            }
        }
        let inputs: HashSet<&str> = self.inputs.iter().copied().collect();
        self.tensors.extend(added);
        for t in &self.tensors {
            if live.contains(t.name.as_ref()) || inputs.contains(t.name.as_ref()) {
                t.encode(&mut graph);
            }
        }
        for raw in &self.other {
            graph.extend_from_slice(raw);
        }
        Ok(Rewrite {
            graph,
            products,
            gathers,
        })
    }
}

/// `name` as a weight stored in int8 and scaled to f32 by the graph, if it is one.
fn int8_weight<'g>(
    nodes: &'g [Node],
    tensors: &'g [Tensor],
    producer: &HashMap<&str, usize>,
    tensor: &HashMap<&str, usize>,
    name: &str,
) -> Option<Int8Weight<'g>> {
    let mul = &nodes[*producer.get(name)?];
    if !mul.is("Mul") || mul.inputs.len() != 2 {
        return None;
    }
    let (cast, scale) = [(0, 1), (1, 0)].into_iter().find_map(|(c, s)| {
        let cast = &nodes[*producer.get(mul.inputs[c].as_ref())?];
        let scale = &tensors[*tensor.get(mul.inputs[s].as_ref())?];
        (cast.is("Cast") && cast.int("to") == Some(FLOAT) && cast.inputs.len() == 1)
            .then_some((cast, scale))
    })?;
    let weight = &tensors[*tensor.get(cast.inputs[0].as_ref())?];
    let [rows, cols] = weight.dims[..] else {
        return None;
    };
    let (rows, cols) = (usize::try_from(rows).ok()?, usize::try_from(cols).ok()?);
    let data = weight.data.as_deref()?;
    let scales = scale.floats()?;
    if weight.data_type != INT8 || data.len() != rows.checked_mul(cols)? || scales.is_empty() {
        return None;
    }
    let per_column = matches!(scale.dims[..], [1, c] | [c] if c == cols as i64);
    let per_row = matches!(scale.dims[..], [r, 1] if r == rows as i64);
    (per_column || per_row).then_some(Int8Weight {
        weight: weight.name.as_ref(),
        data,
        scale: scale.name.as_ref(),
        scales,
        rows,
        cols,
        per_row_scale: per_row && !per_column,
    })
}

/// The protobuf wire format, as much of it as reading and writing ONNX graphs takes.
mod wire {
    use super::RewriteError;

    pub enum Value<'a> {
        Varint(u64),
        Bytes(&'a [u8]),
        Fixed,
    }

    pub struct Field<'a> {
        pub number: u64,
        pub value: Value<'a>,
        /// The whole field as encoded: key and value.
        pub raw: &'a [u8],
    }

    impl<'a> Field<'a> {
        pub fn bytes(&self) -> Result<&'a [u8], RewriteError> {
            match self.value {
                Value::Bytes(b) => Ok(b),
                _ => Err(RewriteError::Malformed("a field of the wrong type")),
            }
        }

        pub fn str(&self) -> Result<&'a str, RewriteError> {
            std::str::from_utf8(self.bytes()?)
                .map_err(|_| RewriteError::Malformed("a name not in UTF-8"))
        }

        pub fn int(&self) -> Result<i64, RewriteError> {
            match self.value {
                Value::Varint(v) => Ok(v as i64),
                _ => Err(RewriteError::Malformed("a field of the wrong type")),
            }
        }
    }

    const MALFORMED: RewriteError = RewriteError::Malformed("truncated protobuf");

    fn varint(buf: &[u8], at: &mut usize) -> Result<u64, RewriteError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *buf.get(*at).ok_or(MALFORMED)?;
            *at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(RewriteError::Malformed("a varint over 10 bytes"))
    }

    /// The fields of one message, in order.
    pub fn fields(buf: &[u8]) -> impl Iterator<Item = Result<Field<'_>, RewriteError>> {
        let mut at = 0;
        std::iter::from_fn(move || {
            if at >= buf.len() {
                return None;
            }
            let start = at;
            let field = (|| {
                let key = varint(buf, &mut at)?;
                let value = match key & 7 {
                    0 => Value::Varint(varint(buf, &mut at)?),
                    1 | 5 => {
                        let width = if key & 7 == 1 { 8 } else { 4 };
                        at = at
                            .checked_add(width)
                            .filter(|&end| end <= buf.len())
                            .ok_or(MALFORMED)?;
                        Value::Fixed
                    }
                    2 => {
                        let len = usize::try_from(varint(buf, &mut at)?).map_err(|_| MALFORMED)?;
                        let end = at
                            .checked_add(len)
                            .filter(|&end| end <= buf.len())
                            .ok_or(MALFORMED)?;
                        let bytes = &buf[at..end];
                        at = end;
                        Value::Bytes(bytes)
                    }
                    _ => {
                        return Err(RewriteError::Malformed(
                            "a protobuf group or unknown wire type",
                        ))
                    }
                };
                Ok(Field {
                    number: key >> 3,
                    value,
                    raw: &buf[start..at],
                })
            })();
            if field.is_err() {
                at = buf.len();
            }
            Some(field)
        })
    }

    /// The varints of a packed repeated field.
    pub fn varints(buf: &[u8]) -> impl Iterator<Item = Result<u64, RewriteError>> + '_ {
        let mut at = 0;
        std::iter::from_fn(move || {
            (at < buf.len()).then(|| {
                let v = varint(buf, &mut at);
                if v.is_err() {
                    at = buf.len();
                }
                v
            })
        })
    }

    fn put_varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    pub fn put_bytes(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
        put_varint(out, number << 3 | 2);
        put_varint(out, bytes.len() as u64);
        out.extend_from_slice(bytes);
    }

    /// An int32/int64/enum field (negative values take ten bytes, as protobuf encodes them).
    pub fn put_int(out: &mut Vec<u8>, number: u64, v: i64) {
        put_varint(out, number << 3);
        put_varint(out, v as u64);
    }
}

/// Tiny models for tests, here and where the rewrite is run by ONNX Runtime (which uses only
/// [`tests::tiny_model`] and [`tests::weight`]).
#[cfg(any(test, feature = "test-support"))]
#[cfg_attr(not(test), allow(dead_code))]
pub mod tests {
    use super::*;

    /// A little-endian byte image of `values`.
    fn f32_bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn tensor(name: &str, data_type: i64, dims: &[i64], data: &[u8]) -> Vec<u8> {
        let mut t = Vec::new();
        for &d in dims {
            wire::put_int(&mut t, 1, d);
        }
        wire::put_int(&mut t, 2, data_type);
        wire::put_bytes(&mut t, 8, name.as_bytes());
        wire::put_bytes(&mut t, 9, data);
        t
    }

    fn node(op: &str, inputs: &[&str], outputs: &[&str], to: Option<i64>) -> Vec<u8> {
        let mut n = Vec::new();
        for i in inputs {
            wire::put_bytes(&mut n, 1, i.as_bytes());
        }
        for o in outputs {
            wire::put_bytes(&mut n, 2, o.as_bytes());
        }
        wire::put_bytes(&mut n, 4, op.as_bytes());
        if let Some(to) = to {
            let mut a = Vec::new();
            wire::put_bytes(&mut a, 1, b"to");
            wire::put_int(&mut a, 3, to);
            wire::put_int(&mut a, 20, 2);
            wire::put_bytes(&mut n, 5, &a);
        }
        n
    }

    /// A graph input or output: ValueInfoProto { name, type { tensor_type { elem_type } } }.
    fn value_info(name: &str, elem_type: i64) -> Vec<u8> {
        let mut tensor_type = Vec::new();
        wire::put_int(&mut tensor_type, 1, elem_type);
        let mut type_proto = Vec::new();
        wire::put_bytes(&mut type_proto, 1, &tensor_type);
        let mut v = Vec::new();
        wire::put_bytes(&mut v, 1, name.as_bytes());
        wire::put_bytes(&mut v, 2, &type_proto);
        v
    }

    /// The int8 weight of the test models: `rows × cols`, every value of i8 represented.
    pub fn weight(rows: usize, cols: usize) -> Vec<u8> {
        (0..rows * cols)
            .map(|i| ((i * 37 + 11) % 255) as u8 ^ 0x80)
            .collect()
    }

    /// `y = x · (w · scale)` with `w` int8 (`rows × cols`, a scale per column), and
    /// `e = table[ids]` with `table` int8 (`5 × 3`, a scale per row): written as the
    /// exporter writes all-MiniLM-L6-v2's.
    pub fn tiny_model(rows: usize, cols: usize, opset: i64) -> Vec<u8> {
        tiny_model_named(rows, cols, opset, "w_scale")
    }

    /// [`tiny_model`] with a second product of `x` by the same weight, `y2`.
    fn tiny_model_twice(opset: i64) -> Vec<u8> {
        build(4, 6, opset, "w_scale", true)
    }

    /// [`tiny_model`] with the weight's scale named `scale`.
    fn tiny_model_named(rows: usize, cols: usize, opset: i64, scale: &str) -> Vec<u8> {
        build(rows, cols, opset, scale, false)
    }

    fn build(rows: usize, cols: usize, opset: i64, scale: &str, twice: bool) -> Vec<u8> {
        let mut graph = Vec::new();
        if twice {
            wire::put_bytes(&mut graph, 1, &node("MatMul", &["x", "w"], &["y2"], None));
            wire::put_bytes(&mut graph, 12, &value_info("y2", FLOAT));
        }
        for n in [
            node("Cast", &["w_q"], &["w_f"], Some(FLOAT)),
            node("Mul", &["w_f", scale], &["w"], None),
            node("MatMul", &["x", "w"], &["y"], None),
            node("Cast", &["table_q"], &["table_f"], Some(FLOAT)),
            node("Mul", &["table_f", "table_scale"], &["table"], None),
            node("Gather", &["table", "ids"], &["e"], None),
        ] {
            wire::put_bytes(&mut graph, 1, &n);
        }
        let scales: Vec<f32> = (0..cols).map(|c| 0.01 + 0.005 * c as f32).collect();
        for t in [
            tensor(
                "w_q",
                INT8,
                &[rows as i64, cols as i64],
                &weight(rows, cols),
            ),
            tensor(scale, FLOAT, &[1, cols as i64], &f32_bytes(&scales)),
            tensor("table_q", INT8, &[5, 3], &weight(5, 3)),
            tensor(
                "table_scale",
                FLOAT,
                &[5, 1],
                &f32_bytes(&[0.1, 0.2, 0.3, 0.4, 0.5]),
            ),
        ] {
            wire::put_bytes(&mut graph, 5, &t);
        }
        wire::put_bytes(&mut graph, 11, &value_info("x", FLOAT));
        wire::put_bytes(&mut graph, 11, &value_info("ids", INT64));
        wire::put_bytes(&mut graph, 12, &value_info("y", FLOAT));
        wire::put_bytes(&mut graph, 12, &value_info("e", FLOAT));
        let mut opset_id = Vec::new();
        wire::put_int(&mut opset_id, 2, opset);
        let mut model = Vec::new();
        wire::put_int(&mut model, 1, 8);
        wire::put_bytes(&mut model, 8, &opset_id);
        wire::put_bytes(&mut model, 7, &graph);
        model
    }

    /// The ops of a model's graph, in order, and its initializers (name, data type).
    fn contents(model: &[u8]) -> (Vec<String>, Vec<(String, i64)>) {
        let graph = wire::fields(model)
            .map(Result::unwrap)
            .find(|f| f.number == 7)
            .unwrap();
        let graph = Graph::parse(graph.bytes().unwrap()).unwrap();
        let ops = graph.nodes.iter().map(|n| n.op.to_string()).collect();
        let tensors = graph
            .tensors
            .iter()
            .map(|t| (t.name.to_string(), t.data_type))
            .collect();
        (ops, tensors)
    }

    #[test]
    fn a_product_by_an_int8_weight_becomes_an_integer_product() {
        let rewritten = quantize_products(&tiny_model(4, 6, 17)).unwrap();
        assert_eq!((rewritten.products, rewritten.gathers), (1, 1));
        let (ops, tensors) = contents(&rewritten.model);
        assert_eq!(
            ops,
            [
                // Each row of x in 256 steps of its own.
                "ReduceMin",
                "Sub",
                "ReduceMax",
                "Div",
                "Max",
                "Div",
                "Round",
                "Cast",
                // The product, scaled back and unshifted.
                "MatMulInteger",
                "Cast",
                "Mul",
                "Mul",
                "Mul",
                "Add",
                // The table's rows gathered in int8, then scaled.
                "Gather",
                "Cast",
                "Gather",
                "Mul"
            ]
        );
        // The int8 weight went over as u8; the table stays int8; no f32 copy of either.
        let names: Vec<&str> = tensors.iter().map(|(n, _)| n.as_str()).collect();
        assert!(!names.contains(&"w_q"), "{names:?}");
        assert!(names.contains(&"table_q"));
        let u8_weight = format!("{PREFIX}/w_q/u8");
        assert!(tensors.contains(&(u8_weight.clone(), UINT8)));
        let graph = wire::fields(&rewritten.model)
            .map(Result::unwrap)
            .find(|f| f.number == 7)
            .unwrap();
        let graph = Graph::parse(graph.bytes().unwrap()).unwrap();
        let data = graph
            .tensors
            .iter()
            .find(|t| t.name == u8_weight)
            .and_then(|t| t.data.clone())
            .unwrap();
        let shifted: Vec<i16> = data.iter().map(|&b| i16::from(b) - 128).collect();
        let original: Vec<i16> = weight(4, 6).iter().map(|&b| i16::from(b as i8)).collect();
        assert_eq!(shifted, original);
    }

    #[test]
    fn products_of_one_input_quantize_it_once() {
        for opset in [17, 18] {
            let rewritten = quantize_products(&tiny_model_twice(opset)).unwrap();
            assert_eq!(rewritten.products, 2);
            let (ops, tensors) = contents(&rewritten.model);
            let count = |op: &str| ops.iter().filter(|o| *o == op).count();
            assert_eq!((count("ReduceMin"), count("MatMulInteger")), (1, 2));
            let u8_weights = tensors.iter().filter(|(_, t)| *t == UINT8).count();
            assert_eq!(u8_weights, 3, "the weight once, and two zero points");
            // `axes` is an attribute up to opset 17 and an input from 18.
            let axis_input = tensors.iter().any(|(n, _)| n.ends_with("/last_axis"));
            assert_eq!(axis_input, opset >= 18);
        }
    }

    #[test]
    fn models_it_does_not_understand_are_refused_without_panicking() {
        assert!(matches!(
            quantize_products(b""),
            Err(RewriteError::Malformed(_))
        ));
        // No int8 weight: a MatMul by a float initializer.
        let mut graph = Vec::new();
        wire::put_bytes(&mut graph, 1, &node("MatMul", &["x", "w"], &["y"], None));
        wire::put_bytes(
            &mut graph,
            5,
            &tensor("w", FLOAT, &[1, 1], &f32_bytes(&[2.0])),
        );
        wire::put_bytes(&mut graph, 11, &value_info("x", FLOAT));
        wire::put_bytes(&mut graph, 12, &value_info("y", FLOAT));
        let mut opset_id = Vec::new();
        wire::put_int(&mut opset_id, 2, 17);
        let mut model = Vec::new();
        wire::put_bytes(&mut model, 8, &opset_id);
        wire::put_bytes(&mut model, 7, &graph);
        assert!(matches!(
            quantize_products(&model),
            Err(RewriteError::NothingToRewrite)
        ));
        // Every truncation and a few corruptions of a good model: an answer, never a panic.
        let good = tiny_model(4, 6, 17);
        for end in 0..good.len() {
            let _ = quantize_products(&good[..end]);
        }
        for at in (0..good.len()).step_by(3) {
            let mut bad = good.clone();
            bad[at] ^= 0xff;
            let _ = quantize_products(&bad);
        }
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        assert!(quantize_products(&noise).is_err());
    }

    #[test]
    fn names_already_in_the_graph_are_never_reused() {
        let taken = format!("{PREFIX}/w_scale");
        let model = tiny_model_named(4, 6, 17, &taken);
        assert!(
            matches!(quantize_products(&model), Err(RewriteError::NameTaken(name)) if name == taken)
        );
    }

    #[test]
    fn wire_round_trip() {
        let mut buf = Vec::new();
        wire::put_int(&mut buf, 1, 300);
        wire::put_int(&mut buf, 2, -1);
        wire::put_bytes(&mut buf, 15, b"hello");
        let fields: Vec<_> = wire::fields(&buf).map(Result::unwrap).collect();
        assert_eq!(fields.len(), 3);
        assert_eq!((fields[0].number, fields[0].int().unwrap()), (1, 300));
        assert_eq!((fields[1].number, fields[1].int().unwrap()), (2, -1));
        assert_eq!(
            fields[1].raw.len(),
            11,
            "a negative int takes ten bytes and its key"
        );
        assert_eq!((fields[2].number, fields[2].str().unwrap()), (15, "hello"));
        assert!(fields[2].int().is_err());
        let packed = [0xac, 0x02, 0x05];
        let values: Vec<u64> = wire::varints(&packed).map(Result::unwrap).collect();
        assert_eq!(values, [300, 5]);
        assert!(wire::varints(&[0x80]).next().unwrap().is_err());
    }
}
