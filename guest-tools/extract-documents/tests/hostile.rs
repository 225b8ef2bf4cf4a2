//! Hostile inputs, each built here: every one must end quickly with a clear error or partial
//! text, never a panic.

mod common;

use common::*;
use extract_documents::{ExtractError, FORMATS};

fn malformed_containing(r: &Result<extract_documents::Extracted, ExtractError>, needle: &str) {
    match r {
        Err(ExtractError::Malformed(m)) => assert!(m.contains(needle), "{m:?} should say {needle:?}"),
        other => panic!("expected Malformed({needle}), got {other:?}"),
    }
}

const DOC: &str = r#"<w:document xmlns:w="w"><w:body><w:p><w:r><w:t>Hello</w:t></w:r></w:p></w:body></w:document>"#;

#[test]
fn docx_zip_bomb_declared_over_the_entry_limit() {
    // The entry declares 3 GiB; nothing is allocated by that size.
    let mut z = make_zip(&[("word/document.xml", DOC.as_bytes())]);
    patch_declared_size(&mut z, "word/document.xml", 3 << 30);
    let (r, took) = timed("bomb.docx", &z);
    malformed_containing(&r, "over the 256 MiB limit");
    assert!(took < QUICK);
}

#[test]
fn docx_entry_inflating_past_what_it_declares() {
    // 8 MiB of zeros declared as 100 bytes: zip stops at the declared size and the CRC fails.
    let big = format!("{}{}", &DOC[..DOC.len() - 24], " ".repeat(8 << 20)) + "</w:body></w:document>";
    let mut z = make_zip(&[("word/document.xml", big.as_bytes())]);
    patch_declared_size(&mut z, "word/document.xml", 100);
    let (r, took) = timed("lying.docx", &z);
    assert!(matches!(r, Err(ExtractError::Malformed(_))), "{r:?}");
    assert!(took < QUICK);
}

#[test]
fn xlsx_zip_bomb_checked_before_calamine() {
    let mut z = make_zip(&[("xl/workbook.xml", b"<workbook/>"), ("xl/sharedStrings.xml", b"<sst/>")]);
    patch_declared_size(&mut z, "xl/sharedStrings.xml", 300 << 20);
    let (r, took) = timed("bomb.xlsx", &z);
    malformed_containing(&r, "over the 256 MiB limit");
    assert!(took < QUICK);
}

#[test]
fn deeply_nested_xml() {
    let deep = format!(r#"<w:document xmlns:w="w"><w:body>{}</w:body></w:document>"#, "<w:p>".repeat(200_000));
    let z = make_zip(&[("word/document.xml", deep.as_bytes())]);
    let (r, took) = timed("deep.docx", &z);
    malformed_containing(&r, "deeper than 256");
    assert!(took < QUICK);

    let deep_html = format!("<html><body>{}</body></html>", "<div>".repeat(200_000));
    let z = make_zip(&[
        ("META-INF/container.xml", br#"<container><rootfiles><rootfile full-path="c.opf"/></rootfiles></container>"#),
        ("c.opf", br#"<package><manifest><item id="a" href="a.xhtml" media-type="application/xhtml+xml"/></manifest><spine><itemref idref="a"/></spine></package>"#),
        ("a.xhtml", deep_html.as_bytes()),
    ]);
    let (r, took) = timed("deep.epub", &z);
    malformed_containing(&r, "deeper than 256");
    assert!(took < QUICK);
}

#[test]
fn xlsx_huge_dimension_and_a_million_empty_cells() {
    let mut rows = String::with_capacity(24 << 20);
    for r in 1..=1000 {
        rows.push_str(&format!("<row r=\"{r}\">"));
        for c in 0..1000 {
            // Column names AAA.. keep every reference valid.
            let col = format!(
                "{}{}{}",
                (b'A' + (c / 676) as u8) as char,
                (b'A' + (c / 26 % 26) as u8) as char,
                (b'A' + (c % 26) as u8) as char
            );
            rows.push_str(&format!("<c r=\"{col}{r}\"/>"));
        }
        rows.push_str("</row>");
    }
    rows.push_str(r#"<row r="1048576"><c r="A1048576" t="inlineStr"><is><t>first</t></is></c><c r="XFD1048576" t="inlineStr"><is><t>last</t></is></c></row>"#);
    let sheet = format!(
        r#"<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><dimension ref="A1:XFD1048576"/><sheetData>{rows}</sheetData></worksheet>"#
    );
    let wb = r#"<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Big" sheetId="1" r:id="rId1"/></sheets></workbook>"#;
    let rels = r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>"#;
    let z = make_zip(&[
        ("_rels/.rels", RELS.as_bytes()),
        ("xl/workbook.xml", wb.as_bytes()),
        ("xl/_rels/workbook.xml.rels", rels.as_bytes()),
        ("xl/worksheets/sheet1.xml", sheet.as_bytes()),
    ]);
    let (r, took) = timed("huge.xlsx", &z);
    let e = r.unwrap();
    // The gap between the two cells is capped: not 16,382 empty cells.
    assert_eq!(part(&e, Some("sheet Big")), "first |  |  |  |  |  |  |  |  | last");
    assert!(took < QUICK * 2);
}

fn cyclic_pdf(page_extra: &str, content: &str, more: &[String]) -> Vec<u8> {
    let mut objs = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        // The page tree lists itself as a kid, and the page twice.
        "<< /Type /Pages /Kids [3 0 R 2 0 R 3 0 R] /Count 3 >>".to_string(),
        format!(
            "<< /Type /Page /Parent 2 0 R {page_extra} /Resources << /Font << /F1 5 0 R >> /XObject << /X1 6 0 R /X2 7 0 R >> >> /Contents 4 0 R >>"
        ),
        stream(content, ""),
        HELVETICA.to_string(),
    ];
    objs.extend(more.iter().cloned());
    make_pdf(&objs, 1, None)
}

#[test]
fn pdf_cyclic_page_tree_and_parent_loop() {
    let text = lines_at(72, 700, &["Still read."]);
    let forms = [stream("", "/Type /XObject /Subtype /Form"), stream("", "/Type /XObject /Subtype /Form")];
    let (r, took) = timed("cycle.pdf", &cyclic_pdf("", &text, &forms));
    let e = r.unwrap();
    assert_eq!(e.parts.len(), 1);
    assert_eq!(e.parts[0].text, "Still read.");
    assert!(took < QUICK);

    // /Parent pointing at the page itself.
    let objs = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 3 0 R /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>".to_string(),
        stream(&text, ""),
        HELVETICA.to_string(),
    ];
    let (r, took) = timed("parent-loop.pdf", &make_pdf(&objs, 1, None));
    assert_eq!(r.unwrap().parts[0].text, "Still read.");
    assert!(took < QUICK);
}

#[test]
fn pdf_form_xobject_recursion() {
    // X1 draws text, itself and X2; X2 draws X1 and itself: every cycle is cut, so the form's
    // text comes once.
    let forms = [
        stream(
            &(lines_at(72, 600, &["In the form."]) + "/X1 Do /X2 Do"),
            "/Type /XObject /Subtype /Form /Resources << /Font << /F1 5 0 R >> /XObject << /X1 6 0 R /X2 7 0 R >> >>",
        ),
        stream("/X1 Do /X2 Do", "/Type /XObject /Subtype /Form /Resources << /XObject << /X1 6 0 R /X2 7 0 R >> >>"),
    ];
    let (r, took) = timed("forms.pdf", &cyclic_pdf("", &(lines_at(72, 700, &["On the page."]) + "/X1 Do"), &forms));
    let e = r.unwrap();
    assert_eq!(e.parts[0].text, "On the page.\n\nIn the form.");
    assert!(took < QUICK);

    // A chain of 10,000 self-drawing forms per level: the op budget and depth cap end it.
    let fan = stream(
        &"/X1 Do ".repeat(10_000),
        "/Type /XObject /Subtype /Form /Resources << /XObject << /X1 6 0 R /X2 7 0 R >> >>",
    );
    let (r, took) = timed(
        "fan.pdf",
        &cyclic_pdf("", &(lines_at(72, 700, &["Fan."]) + &"/X2 Do ".repeat(10_000)), &[fan.clone(), fan]),
    );
    assert_eq!(r.unwrap().parts[0].text, "Fan.");
    assert!(took < QUICK);
}

#[test]
fn pdf_deeply_nested_arrays_and_dicts() {
    let deep_array = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_dict = format!("{}{}", "<< /A ".repeat(50_000), ">>".repeat(50_000));
    let content = format!("{deep_array} pop {}", lines_at(72, 700, &["After the arrays."]));
    let pdf = cyclic_pdf(&format!("/Deep {deep_array} /Deeper {deep_dict}"), &content, &[]);
    let (r, took) = timed("nested.pdf", &pdf);
    // lopdf stops parsing the content at the too-deep array, so the page may read as empty;
    // what matters is a clear answer, fast, and no stack overflow.
    assert!(r.is_ok() || matches!(r, Err(ExtractError::Malformed(_) | ExtractError::NoText(_))), "{r:?}");
    assert!(took < QUICK);
}

#[test]
fn truncated_files() {
    let pages: Vec<String> = (1..=6).map(|i| lines_at(72, 700, &[&format!("Page {i} text.")])).collect();
    let pdf = simple_pdf(&pages);
    for cut in [pdf.len() / 2, pdf.len() * 3 / 4, pdf.len() - 30] {
        let (r, took) = timed("cut.pdf", &pdf[..cut]);
        match r {
            Ok(e) => assert!(!e.parts.is_empty() && e.parts.len() < 6 || cut > pdf.len() / 2),
            Err(ExtractError::Malformed(_)) => {}
            Err(e) => panic!("{e}"),
        }
        assert!(took < QUICK);
    }

    let z = make_zip(&[("word/document.xml", DOC.as_bytes()), ("docProps/core.xml", b"<x/>")]);
    let (r, took) = timed("cut.docx", &z[..z.len() / 2]);
    malformed_containing(&r, "zip");
    assert!(took < QUICK);
}

#[test]
fn empty_and_random_bytes_under_every_extension() {
    for ext in FORMATS {
        let name = format!("x.{ext}");
        let (r, _) = timed(&name, b"");
        malformed_containing(&r, "empty");
        for seed in 0..4 {
            let bytes = noise(64 << 10, seed);
            let (r, took) = timed(&name, &bytes);
            assert!(matches!(r, Err(ExtractError::Malformed(_))), "{name}: {r:?}");
            assert!(took < QUICK);
        }
        // A valid prefix and noise after it.
        let mut bytes = match *ext {
            "pdf" => b"%PDF-1.7\n".to_vec(),
            "rtf" => b"{\\rtf1 ".to_vec(),
            "ipynb" => b"{\"cells\": [".to_vec(),
            _ => b"PK\x03\x04".to_vec(),
        };
        bytes.extend(noise(64 << 10, 99));
        let (r, took) = timed(&name, &bytes);
        assert!(r.is_ok() || matches!(r, Err(ExtractError::Malformed(_) | ExtractError::NoText(_))), "{name}: {r:?}");
        assert!(took < QUICK);
    }
}

#[test]
fn encrypted_office_file_is_unsupported() {
    let mut ole = vec![0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];
    ole.extend(noise(4096, 1));
    let (r, _) = timed("locked.docx", &ole);
    assert!(matches!(r, Err(ExtractError::Unsupported(_))), "{r:?}");
}

#[test]
fn rtf_and_notebook_nesting() {
    let deep = format!("{{\\rtf1 {}text{}}}", "{".repeat(100_000), "}".repeat(100_000));
    let (r, took) = timed("deep.rtf", deep.as_bytes());
    malformed_containing(&r, "deeper than 256");
    assert!(took < QUICK);

    let deep = format!("{{\"cells\": {}{}}}", "[".repeat(100_000), "]".repeat(100_000));
    let (r, took) = timed("deep.ipynb", deep.as_bytes());
    malformed_containing(&r, "recursion limit");
    assert!(took < QUICK);
}
