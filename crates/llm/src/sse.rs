//! Server-Sent Events framing (WHATWG HTML, "event stream interpretation"), fed with arbitrary
//! byte chunks: an event may be split anywhere, even inside a UTF-8 character or a `\r\n`.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field; `message` when absent.
    pub event: String,
    /// The `data:` lines joined by `\n`.
    pub data: String,
}

/// Incremental decoder: push chunks, get the complete events.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    /// Bytes of a line not yet terminated.
    buf: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    /// Skip one `\n` at the start of the next chunk (the previous chunk ended on `\r`).
    skip_lf: bool,
    started: bool,
}

impl SseDecoder {
    /// Feeds bytes; returns the events they complete.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let mut bytes = chunk;
        if self.skip_lf {
            self.skip_lf = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if b == b'\n' || b == b'\r' {
                self.buf.extend_from_slice(&bytes[start..i]);
                let line = std::mem::take(&mut self.buf);
                self.line(&line, &mut out);
                if b == b'\r' {
                    if i + 1 < bytes.len() {
                        if bytes[i + 1] == b'\n' {
                            i += 1;
                        }
                    } else {
                        self.skip_lf = true;
                    }
                }
                start = i + 1;
            }
            i += 1;
        }
        self.buf.extend_from_slice(&bytes[start..]);
        out
    }

    /// The end of the stream: a last event without its blank line still counts (lenient, so a
    /// server that forgets it loses nothing; a cut JSON payload fails later, where it is parsed).
    pub fn finish(&mut self) -> Option<SseEvent> {
        let mut out = Vec::new();
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            self.line(&line, &mut out);
        }
        self.line(b"", &mut out);
        out.pop()
    }

    fn line(&mut self, raw: &[u8], out: &mut Vec<SseEvent>) {
        let mut raw = raw;
        if !self.started {
            self.started = true;
            raw = raw.strip_prefix("\u{feff}".as_bytes()).unwrap_or(raw);
        }
        // Lines end before a multi-byte character could be cut, so this is lossless for UTF-8.
        let line = String::from_utf8_lossy(raw);
        if line.is_empty() {
            if self.has_data {
                let mut data = std::mem::take(&mut self.data);
                if data.ends_with('\n') {
                    data.pop();
                }
                let event = std::mem::take(&mut self.event);
                out.push(SseEvent {
                    event: if event.is_empty() {
                        "message".into()
                    } else {
                        event
                    },
                    data,
                });
            }
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            return;
        }
        if line.starts_with(':') {
            return; // a comment (keep-alive)
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            _ => {} // id, retry: not needed here
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = SseDecoder::default();
        let mut out: Vec<SseEvent> = chunks.iter().flat_map(|c| d.push(c)).collect();
        out.extend(d.finish());
        out
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn frames_with_any_line_ending_and_any_split() {
        let text = "event: a\r\ndata: {\"x\":\"é→😀\"}\r\n\r\n: keep-alive\n\nevent: b\rdata: one\rdata:two\r\rdata: [DONE]\n\n";
        let want = vec![
            ev("a", "{\"x\":\"é→😀\"}"),
            ev("b", "one\ntwo"),
            ev("message", "[DONE]"),
        ];
        assert_eq!(all(&[text.as_bytes()]), want);
        let bytes = text.as_bytes();
        // Every two-way split, then one byte at a time.
        for cut in 0..=bytes.len() {
            assert_eq!(all(&[&bytes[..cut], &bytes[cut..]]), want, "cut at {cut}");
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(all(&singles), want);
    }

    #[test]
    fn edge_cases() {
        // No data: no event; the event name does not leak into the next one.
        assert_eq!(all(&[b"event: x\n\ndata: y\n\n"]), vec![ev("message", "y")]);
        // A missing final blank line still yields the event.
        assert_eq!(all(&[b"event: e\ndata: last"]), vec![ev("e", "last")]);
        // BOM, a field without colon, an empty data line, unknown fields.
        assert_eq!(
            all(&["\u{feff}data\nid: 3\nretry: 10\ndata:\n\n".as_bytes()]),
            vec![ev("message", "\n")]
        );
    }
}
