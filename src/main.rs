//! `ai`: the command line of ai-smartness (and, with `ai daemon run`, the daemon itself).

use std::process::ExitCode;

fn main() -> ExitCode {
    match ai_smartness::cli::run() {
        Ok(code) => code,
        Err(e) => {
            // `ai threads | head` closes our stdout early: that is not an error.
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("ai: {e:#}");
            ExitCode::FAILURE
        }
    }
}
