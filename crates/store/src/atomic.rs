//! The JSON writer for records that hold what people and models said, redacted first, on the
//! one atomic writer (`ai_smartness_proto::atomic`).

use ai_smartness_proto::atomic::write_json_atomic;
use serde::Serialize;
use std::io;
use std::path::Path;

/// [`write_json_atomic`] with every string of the value redacted first (secrets replaced,
/// `<private>` spans dropped): for records that hold what people and models said (sessions,
/// runs), so that no secret in them is ever written.
pub fn write_json_redacted_atomic<T: Serialize + ?Sized>(path: &Path, value: &T) -> io::Result<()> {
    let value = serde_json::to_value(value).map_err(io::Error::from)?;
    let (value, _) = ai_smartness_capture::admit::redact_json(value);
    write_json_atomic(path, &value)
}
