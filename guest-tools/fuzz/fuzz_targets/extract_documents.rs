//! The document extractors on arbitrary bytes, for each format: as the whole
//! file, and (for the zip-based formats) as the main XML part of an
//! otherwise valid package, where the XML readers see the bytes. Nothing may
//! panic (a panic aborts the extractor's instance), and text comes back only
//! in labelled, non-empty parts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Write as _;

/// Each format, and the part its XML reader starts from (for zip-based ones).
const FORMATS: [(&str, Option<&str>); 9] = [
    ("a.pdf", None),
    ("a.docx", Some("word/document.xml")),
    ("a.pptx", Some("ppt/slides/slide1.xml")),
    ("a.xlsx", Some("xl/worksheets/sheet1.xml")),
    ("a.odt", Some("content.xml")),
    ("a.ods", Some("content.xml")),
    ("a.epub", Some("META-INF/container.xml")),
    ("a.rtf", None),
    ("a.ipynb", None),
];

/// A zip holding `data` at `part`, stored uncompressed.
fn package(part: &str, data: &[u8]) -> Vec<u8> {
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let mut add = |name: &str, bytes: &[u8]| {
        out.start_file(name, options).expect("in memory");
        out.write_all(bytes).expect("in memory");
    };
    add("mimetype", b"application/vnd.oasis.opendocument.text");
    add(part, data);
    out.finish().expect("in memory").into_inner()
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let (name, part) = FORMATS[pick as usize % FORMATS.len()];
    let packaged;
    let bytes = match part {
        Some(part) if pick as usize / FORMATS.len() % 2 == 1 => {
            packaged = package(part, rest);
            &packaged[..]
        }
        _ => rest,
    };
    if let Ok(doc) = extract_documents::extract(name, bytes) {
        for p in &doc.parts {
            assert!(!p.text.trim().is_empty(), "{name}: an empty part");
        }
    }
});
