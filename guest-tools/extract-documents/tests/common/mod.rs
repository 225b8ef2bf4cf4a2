//! Builders for test files: zips, PDFs written object by object, and a timed extract.

#![allow(dead_code)]

use std::io::{Cursor, Write};
use std::time::{Duration, Instant};

use extract_documents::{ExtractError, Extracted, extract};
use zip::write::SimpleFileOptions;

/// A zip with `entries`, deflated.
pub fn make_zip(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data) in entries {
        let opts = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        w.start_file(*name, opts).unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

/// Rewrites the uncompressed size that the local and central headers of entry `name` declare.
pub fn patch_declared_size(zip: &mut [u8], name: &str, size: u32) {
    let n = name.as_bytes();
    let mut patched = 0;
    let mut i = 0;
    while i + 46 <= zip.len() {
        if zip[i..i + 4] == [0x50, 0x4b, 0x03, 0x04] {
            let len = u16::from_le_bytes([zip[i + 26], zip[i + 27]]) as usize;
            if zip.get(i + 30..i + 30 + len) == Some(n) {
                zip[i + 22..i + 26].copy_from_slice(&size.to_le_bytes());
                patched += 1;
            }
        } else if zip[i..i + 4] == [0x50, 0x4b, 0x01, 0x02] {
            let len = u16::from_le_bytes([zip[i + 28], zip[i + 29]]) as usize;
            if zip.get(i + 46..i + 46 + len) == Some(n) {
                zip[i + 24..i + 28].copy_from_slice(&size.to_le_bytes());
                patched += 1;
            }
        }
        i += 1;
    }
    assert_eq!(patched, 2, "both headers of {name}");
}

/// A PDF of `objects` (object i+1 is `objects[i]`), the catalog being object `root`.
pub fn make_pdf(objects: &[String], root: usize, info: Option<usize>) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{o}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for off in offsets {
        out.extend_from_slice(format!("{off:010} 00000 n \n").as_bytes());
    }
    let info = info.map(|i| format!(" /Info {i} 0 R")).unwrap_or_default();
    out.extend_from_slice(
        format!("trailer\n<< /Size {} /Root {root} 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1)
            .as_bytes(),
    );
    out
}

/// A stream object holding `content`, with `extra` dictionary entries.
pub fn stream(content: &str, extra: &str) -> String {
    format!("<< /Length {} {extra} >>\nstream\n{content}\nendstream", content.len())
}

/// The Helvetica font object every test PDF uses.
pub const HELVETICA: &str = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>";

/// Content drawing `lines` from (x, y) down, 14 points apart.
pub fn lines_at(x: u32, y: u32, lines: &[&str]) -> String {
    let mut s = format!("BT /F1 12 Tf {x} {y} Td ");
    for (i, l) in lines.iter().enumerate() {
        if i > 0 {
            s.push_str("0 -14 Td ");
        }
        s.push_str(&format!("({l}) Tj "));
    }
    s.push_str("ET\n");
    s
}

/// A PDF with one page per content string: objects 1 catalog, 2 pages, 3 font, 4 info,
/// then page and content pairs.
pub fn simple_pdf(pages: &[String]) -> Vec<u8> {
    let mut objs = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        String::new(),
        HELVETICA.to_string(),
        "<< /Title (Test Atlas) /Author (Ada) /CreationDate (D:20240305102030+01'00') >>".to_string(),
    ];
    let mut kids = Vec::new();
    for content in pages {
        let page = objs.len() + 1;
        kids.push(format!("{page} 0 R"));
        objs.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            page + 1
        ));
        objs.push(stream(content, ""));
    }
    objs[1] = format!("<< /Type /Pages /Kids [{}] /Count {} >>", kids.join(" "), pages.len());
    make_pdf(&objs, 1, Some(4))
}

/// Extracts `bytes` as `name`, printing and returning how long it took.
pub fn timed(name: &str, bytes: &[u8]) -> (Result<Extracted, ExtractError>, Duration) {
    let start = Instant::now();
    let r = extract(name, bytes);
    let took = start.elapsed();
    let what = match &r {
        Ok(e) => format!("ok, {} parts", e.parts.len()),
        Err(e) => e.to_string(),
    };
    println!("{name}: {:.1} ms: {}", took.as_secs_f64() * 1e3, what.chars().take(160).collect::<String>());
    (r, took)
}

/// Most a hostile case may take: well under a second optimised, more in a debug build.
pub const QUICK: Duration = if cfg!(debug_assertions) { Duration::from_secs(10) } else { Duration::from_secs(1) };

/// All the parts' text, joined.
pub fn all_text(e: &Extracted) -> String {
    e.parts.iter().map(|p| p.text.as_str()).collect::<Vec<_>>().join("\n\n")
}

/// The text of the part labelled `label`.
pub fn part<'e>(e: &'e Extracted, label: Option<&str>) -> &'e str {
    e.parts
        .iter()
        .find(|p| p.label.as_deref() == label)
        .map(|p| p.text.as_str())
        .unwrap_or_else(|| panic!("no part {label:?} in {:?}", e.parts))
}

/// Deterministic pseudo-random bytes.
pub fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// The package relationships every OOXML file has.
pub const RELS: &str = r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#;
