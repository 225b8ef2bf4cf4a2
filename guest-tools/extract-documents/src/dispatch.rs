//! Which reader a file goes to, and the checks every file gets.

use crate::model::{ExtractError, Extracted, Result};
use crate::{epub, ipynb, odf, ooxml, pdf, rtf, sheets};

/// The file extensions read here: lowercase, without the dot.
pub const FORMATS: &[&str] = &["pdf", "docx", "pptx", "xlsx", "ods", "odt", "epub", "rtf", "ipynb"];

/// The lowercase extension of `name`, if any.
fn extension(name: &str) -> Option<String> {
    let file = name.rsplit(['/', '\\']).next().unwrap_or(name);
    file.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase())
}

/// An OLE compound file: what an encrypted OOXML file (or an old binary one renamed) is.
fn is_ole(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1])
}

/// The text of the file `name` whose content is `bytes`.
pub fn extract(name: &str, bytes: &[u8]) -> Result<Extracted> {
    let ext = extension(name).unwrap_or_default();
    if !FORMATS.contains(&ext.as_str()) {
        return Err(ExtractError::Unsupported(format!(
            "no reader for .{ext} files; this extractor reads {}",
            FORMATS.join(", ")
        )));
    }
    if bytes.is_empty() {
        return Err(ExtractError::Malformed("the file is empty".to_string()));
    }
    if matches!(ext.as_str(), "docx" | "pptx" | "xlsx") && is_ole(bytes) {
        return Err(ExtractError::Unsupported(
            "it is an OLE compound file: a password-protected Office file, or an old binary one (.doc, .ppt, .xls) renamed"
                .to_string(),
        ));
    }
    let extracted = match ext.as_str() {
        "pdf" => pdf::pdf(bytes),
        "docx" => ooxml::docx(bytes),
        "pptx" => ooxml::pptx(bytes),
        "xlsx" => sheets::xlsx(bytes),
        "ods" => odf::ods(bytes),
        "odt" => odf::odt(bytes),
        "epub" => epub::epub(bytes),
        "rtf" => rtf::rtf(bytes),
        "ipynb" => ipynb::ipynb(bytes),
        _ => unreachable!("checked against FORMATS above"),
    }?;
    if extracted.parts.is_empty() {
        return Err(ExtractError::NoText(format!("a valid .{ext} file with no text in it")));
    }
    Ok(extracted)
}
