//! Saving raw results as a report runs, and rendering a report from saved results.

use super::*;

/// Writes every run so far to `results.partial.json`, so a report cut short keeps its raw data
/// (`report --from-results` renders it). A failure to write is logged, not fatal.
pub(crate) fn checkpoint(out_dir: &Path, results: &[PeerReport]) {
    let raw = serde_json::to_string(results).unwrap_or_default();
    if let Err(e) = std::fs::write(out_dir.join("results.partial.json"), raw) {
        eprintln!("could not write results.partial.json: {e}");
    }
}

/// Loads the results of a `results.json` or `results.partial.json` written earlier, to render
/// `report.md` and the charts from them (the notes of that run, such as the real writer's
/// rates, are not kept there).
///
/// # Errors
/// [`ReportError::Io`] when the file cannot be read or parsed, or the output directory made.
pub fn load_results(
    opts: &ReportOptions,
    results_file: &Path,
) -> Result<(Vec<PeerReport>, Notes), ReportError> {
    let raw = std::fs::read(results_file)
        .map_err(|e| ReportError::Io(results_file.display().to_string(), e))?;
    let results: Vec<PeerReport> = serde_json::from_slice(&raw).map_err(|e| {
        ReportError::Io(
            results_file.display().to_string(),
            std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        )
    })?;
    std::fs::create_dir_all(&opts.out_dir)
        .map_err(|e| ReportError::Io("create out dir".into(), e))?;
    let notes = Notes {
        lines: vec![format!(
            "Rendered from {} (the notes of the original run are not kept there).",
            results_file.display()
        )],
        ..Notes::default()
    };
    Ok((results, notes))
}
