//! One test per format, on files built here.

mod common;

use common::*;
use extract_documents::{ExtractError, FORMATS, extract};

fn meta<'e>(e: &'e extract_documents::Extracted, key: &str) -> Option<&'e str> {
    e.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

const W: &str = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;

fn docx(body: &str) -> Vec<u8> {
    let doc = format!(r#"<?xml version="1.0"?><w:document {W}><w:body>{body}</w:body></w:document>"#);
    let styles = format!(
        r#"<w:styles {W}><w:style w:styleId="Heading1"><w:name w:val="heading 1"/></w:style>
        <w:style w:styleId="berschrift2"><w:name w:val="heading 2"/></w:style>
        <w:style w:styleId="ListBullet"><w:name w:val="List Bullet"/><w:pPr><w:numPr><w:numId w:val="1"/></w:numPr></w:pPr></w:style></w:styles>"#
    );
    let core = r#"<cp:coreProperties xmlns:cp="x" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="y">
        <dc:title>Guild Notes</dc:title><dc:creator>Oswin</dc:creator><dcterms:created>2024-03-05T10:20:30Z</dcterms:created></cp:coreProperties>"#;
    make_zip(&[
        ("word/document.xml", doc.as_bytes()),
        ("word/styles.xml", styles.as_bytes()),
        ("docProps/core.xml", core.as_bytes()),
    ])
}

fn p(style: &str, text: &str) -> String {
    let ppr = if style.is_empty() { String::new() } else { format!(r#"<w:pPr><w:pStyle w:val="{style}"/></w:pPr>"#) };
    format!("<w:p>{ppr}<w:r><w:t xml:space=\"preserve\">{text}</w:t></w:r></w:p>")
}

#[test]
fn docx_headings_lists_tables_and_pages() {
    let body = [
        p("Heading1", "Lamps"),
        p("", "Four hundred &amp; twelve lamps."),
        p("ListBullet", "Oil from Dunmere"),
        r#"<w:p><w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="3"/></w:numPr></w:pPr><w:r><w:t>Wicks</w:t></w:r></w:p>"#.into(),
        r#"<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Item</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Cost</w:t></w:r></w:p></w:tc></w:tr>
           <w:tr><w:tc><w:p><w:r><w:t>Wicks</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>44</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"#.into(),
        r#"<w:p><w:r><w:t>Before</w:t><w:br w:type="page"/><w:lastRenderedPageBreak/><w:t>after the break.</w:t></w:r></w:p>"#.into(),
        p("berschrift2", "Outlook"),
        r#"<w:p><w:r><w:delText>deleted</w:delText><w:instrText>PAGE</w:instrText><w:t>Kept.</w:t></w:r></w:p>"#.into(),
    ]
    .concat();
    let e = extract("notes.DOCX", &docx(&body)).unwrap();
    assert_eq!(e.title.as_deref(), Some("Guild Notes"));
    assert_eq!(meta(&e, "author"), Some("Oswin"));
    assert_eq!(meta(&e, "pages"), Some("2"));
    assert_eq!(
        part(&e, Some("p. 1")),
        "# Lamps\n\nFour hundred & twelve lamps.\n\n- Oil from Dunmere\n  - Wicks\n\nItem | Cost\nWicks | 44\n\nBefore"
    );
    assert_eq!(part(&e, Some("p. 2")), "after the break.\n\n## Outlook\n\nKept.");

    // A blank page (two explicit breaks) and a blank cover page still count.
    let brk = r#"<w:p><w:r><w:br w:type="page"/></w:r></w:p>"#;
    let e = extract("b.docx", &docx(&[p("", "alpha"), brk.into(), brk.into(), p("", "gamma")].concat())).unwrap();
    assert_eq!((part(&e, Some("p. 1")), part(&e, Some("p. 3"))), ("alpha", "gamma"));
    assert_eq!(meta(&e, "pages"), Some("3"));
    let e = extract("c.docx", &docx(&[brk.into(), p("", "after the cover")].concat())).unwrap();
    assert_eq!(part(&e, Some("p. 2")), "after the cover");

    // No page breaks: one part, no label.
    let e = extract("a.docx", &docx(&p("", "Only page."))).unwrap();
    assert_eq!(e.parts.len(), 1);
    assert_eq!(e.parts[0].label, None);
}

#[test]
fn pptx_slides_in_presentation_order_with_notes() {
    let pres = r#"<p:presentation xmlns:p="p" xmlns:r="r"><p:sldIdLst><p:sldId id="256" r:id="rId7"/><p:sldId id="257" r:id="rId2"/></p:sldIdLst></p:presentation>"#;
    let rels = r#"<Relationships><Relationship Id="rId2" Type="http://x/slide" Target="slides/slide1.xml"/><Relationship Id="rId7" Type="http://x/slide" Target="/ppt/slides/slide2.xml"/></Relationships>"#;
    let slide = |title: &str, body: &str| {
        format!(
            r#"<p:sld xmlns:p="p" xmlns:a="a"><p:cSld><p:spTree>
            <p:sp><p:nvSpPr><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>{title}</a:t></a:r></a:p></p:txBody></p:sp>
            <p:sp><p:nvSpPr><p:nvPr><p:ph idx="1"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>{body}</a:t></a:r></a:p></p:txBody></p:sp>
            <p:graphicFrame><a:graphic><a:graphicData><a:tbl><a:tr><a:tc><a:txBody><a:p><a:r><a:t>Tank</a:t></a:r></a:p></a:txBody></a:tc><a:tc><a:txBody><a:p><a:r><a:t>40000</a:t></a:r></a:p></a:txBody></a:tc></a:tr></a:tbl></a:graphicData></a:graphic></p:graphicFrame>
            </p:spTree></p:cSld></p:sld>"#
        )
    };
    let s1 = slide("Irrigation", "Rain fills the cistern");
    let s2 = slide("Orchard", "Quince trees");
    let s2rels = r#"<Relationships><Relationship Id="rId1" Type="http://x/notesSlide" Target="../notesSlides/notesSlide1.xml"/></Relationships>"#;
    let notes = r#"<p:notes xmlns:p="p" xmlns:a="a"><p:cSld><p:spTree>
        <p:sp><p:nvSpPr><p:nvPr><p:ph type="sldImg"/></p:nvPr></p:nvSpPr></p:sp>
        <p:sp><p:nvSpPr><p:nvPr><p:ph type="body" idx="1"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>Thank the Ferrows.</a:t></a:r></a:p></p:txBody></p:sp>
        <p:sp><p:nvSpPr><p:nvPr><p:ph type="sldNum" idx="5"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>2</a:t></a:r></a:p></p:txBody></p:sp>
        </p:spTree></p:cSld></p:notes>"#;
    let z = make_zip(&[
        ("ppt/presentation.xml", pres.as_bytes()),
        ("ppt/_rels/presentation.xml.rels", rels.as_bytes()),
        ("ppt/slides/slide1.xml", s1.as_bytes()),
        ("ppt/slides/slide2.xml", s2.as_bytes()),
        ("ppt/slides/_rels/slide2.xml.rels", s2rels.as_bytes()),
        ("ppt/notesSlides/notesSlide1.xml", notes.as_bytes()),
    ]);
    let e = extract("deck.pptx", &z).unwrap();
    assert_eq!(part(&e, Some("slide 1")), "# Orchard\n\nQuince trees\n\nTank | 40000\n\nNotes:\nThank the Ferrows.");
    assert_eq!(part(&e, Some("slide 2")), "# Irrigation\n\nRain fills the cistern\n\nTank | 40000");
    assert_eq!(e.title.as_deref(), Some("Orchard"));
}

pub fn xlsx(sheets: &[(&str, String)]) -> Vec<u8> {
    let mut wb = String::from(
        r#"<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>"#,
    );
    let mut rels =
        String::from(r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">"#);
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for (i, (name, xml)) in sheets.iter().enumerate() {
        wb.push_str(&format!(r#"<sheet name="{name}" sheetId="{}" r:id="rId{}"/>"#, i + 1, i + 1));
        rels.push_str(&format!(
            r#"<Relationship Id="rId{}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet{}.xml"/>"#,
            i + 1,
            i + 1
        ));
        files.push((format!("xl/worksheets/sheet{}.xml", i + 1), xml.clone().into_bytes()));
    }
    wb.push_str("</sheets></workbook>");
    rels.push_str("</Relationships>");
    let ct = r#"<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>"#;
    let mut entries: Vec<(&str, &[u8])> = vec![
        ("[Content_Types].xml", ct.as_bytes()),
        ("_rels/.rels", RELS.as_bytes()),
        ("xl/workbook.xml", wb.as_bytes()),
        ("xl/_rels/workbook.xml.rels", rels.as_bytes()),
    ];
    for (n, b) in &files {
        entries.push((n, b));
    }
    make_zip(&entries)
}

pub fn sheet(dimension: &str, rows: &str) -> String {
    format!(
        r#"<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><dimension ref="{dimension}"/><sheetData>{rows}</sheetData></worksheet>"#
    )
}

#[test]
fn xlsx_sheets_rows_and_gaps() {
    let costs = sheet(
        "A1:C3",
        r#"<row r="1"><c r="A1" t="inlineStr"><is><t>Item</t></is></c><c r="C1" t="inlineStr"><is><t>Amount</t></is></c></row>
           <row r="2"/>
           <row r="3"><c r="A3" t="inlineStr"><is><t>Chain</t></is></c><c r="B3" t="inlineStr"><is><t>Forge</t></is></c><c r="C3"><v>1250</v></c><c r="D3"><v>310.5</v></c><c r="E3"/></row>"#,
    );
    let staff = sheet("A1:A1", r#"<row r="1"><c r="A1" t="b"><v>1</v></c></row>"#);
    let e = extract("ledger.xlsx", &xlsx(&[("Costs", costs), ("Staff", staff)])).unwrap();
    assert_eq!(part(&e, Some("sheet Costs")), "Item |  | Amount\nChain | Forge | 1250 | 310.5");
    assert_eq!(part(&e, Some("sheet Staff")), "TRUE");
}

fn odf(kind: &str, body: &str) -> Vec<u8> {
    let content = format!(
        r#"<office:document-content xmlns:office="o" xmlns:text="t" xmlns:table="ta" xmlns:style="s" xmlns:fo="f">
        <office:automatic-styles><style:style style:name="P9" style:family="paragraph"><style:paragraph-properties fo:break-before="page"/></style:style></office:automatic-styles>
        <office:body><office:{kind}>{body}</office:{kind}></office:body></office:document-content>"#
    );
    let meta = r#"<office:document-meta xmlns:office="o" xmlns:dc="d" xmlns:meta="m"><office:meta><dc:title>Clocks</dc:title><meta:initial-creator>Ada</meta:initial-creator><meta:keyword>a</meta:keyword><meta:keyword>b</meta:keyword></office:meta></office:document-meta>"#;
    make_zip(&[
        ("mimetype", b"application/vnd.oasis.opendocument"),
        ("content.xml", content.as_bytes()),
        ("meta.xml", meta.as_bytes()),
    ])
}

#[test]
fn odt_headings_lists_tables_and_page_breaks() {
    let body = r#"<text:h text:outline-level="2">The <text:span>Apprentice</text:span></text:h>
        <text:p>Fenna oiled<text:s text:c="3"/>the gears.<text:note><text:note-body><text:p>A footnote.</text:p></text:note-body></text:note></text:p>
        <text:list><text:list-item><text:p>Walnut</text:p><text:list><text:list-item><text:p>Tin</text:p></text:list-item></text:list></text:list-item></text:list>
        <table:table><table:table-row><table:table-cell><text:p>Clock</text:p></table:table-cell><table:table-cell><text:p>1791</text:p></table:table-cell></table:table-row></table:table>
        <text:p text:style-name="P9">Second page.</text:p>"#;
    let e = extract("story.odt", &odf("text", body)).unwrap();
    assert_eq!(e.title.as_deref(), Some("Clocks"));
    assert_eq!(meta(&e, "keywords"), Some("a, b"));
    assert_eq!(
        part(&e, Some("p. 1")),
        "## The Apprentice\n\nFenna oiled the gears.\n\n- Walnut\n  - Tin\n\nClock | 1791"
    );
    assert_eq!(part(&e, Some("p. 2")), "Second page.");
}

#[test]
fn ods_sheets_with_repeats() {
    let body = r#"<table:table table:name="Costs">
        <table:table-row><table:table-cell><text:p>Item</text:p></table:table-cell><table:table-cell table:number-columns-repeated="3"/><table:table-cell><text:p>Amount</text:p></table:table-cell></table:table-row>
        <table:table-row table:number-rows-repeated="1048570"><table:table-cell table:number-columns-repeated="16384"/></table:table-row>
        <table:table-row><table:table-cell><text:p>Chain</text:p></table:table-cell></table:table-row>
        </table:table><table:table table:name="Staff"><table:table-row><table:table-cell><text:p>Corin</text:p></table:table-cell></table:table-row></table:table>"#;
    let (r, took) = timed("ledger.ods", &odf("spreadsheet", body));
    let e = r.unwrap();
    assert!(took < QUICK);
    assert_eq!(part(&e, Some("sheet Costs")), "Item |  |  |  | Amount\nChain");
    assert_eq!(part(&e, Some("sheet Staff")), "Corin");
}

#[test]
fn epub_spine_order_and_heading_labels() {
    let container = r#"<container><rootfiles><rootfile full-path="OEBPS/content.opf"/></rootfiles></container>"#;
    let opf = r#"<package xmlns:dc="http://purl.org/dc/elements/1.1/"><metadata><dc:title>Roads</dc:title><dc:creator>Idris</dc:creator></metadata>
        <manifest><item id="a" href="text/ch%201.xhtml" media-type="application/xhtml+xml"/><item id="b" href="text/b.xhtml" media-type="application/xhtml+xml"/>
        <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/></manifest>
        <spine><itemref idref="nav"/><itemref idref="b"/><itemref idref="a"/></spine></package>"#;
    let a = r#"<html xmlns="http://www.w3.org/1999/xhtml"><head><title>x</title><style>p{}</style></head><body>
        <h1>The Salt Road, a chapter whose heading is far longer than sixty characters in all</h1><p>Caravans rest at <em>Ambrel</em>&nbsp;well.<br/>Second line.</p>
        <ul><li>One</li><li>Two</li></ul><table><tr><th>A</th><td>B</td></tr></table></body></html>"#;
    let b = r#"<html xmlns="http://www.w3.org/1999/xhtml"><body><p>No heading here.</p></body></html>"#;
    let nav = r#"<html><body><nav><ol><li>Salt Road</li></ol></nav></body></html>"#;
    let z = make_zip(&[
        ("mimetype", b"application/epub+zip"),
        ("META-INF/container.xml", container.as_bytes()),
        ("OEBPS/content.opf", opf.as_bytes()),
        ("OEBPS/text/ch 1.xhtml", a.as_bytes()),
        ("OEBPS/text/b.xhtml", b.as_bytes()),
        ("OEBPS/nav.xhtml", nav.as_bytes()),
    ]);
    let e = extract("roads.epub", &z).unwrap();
    assert_eq!(e.title.as_deref(), Some("Roads"));
    assert_eq!(e.parts.len(), 2);
    assert_eq!(e.parts[0].label.as_deref(), Some("chapter 1"));
    assert_eq!(e.parts[0].text, "No heading here.");
    assert_eq!(e.parts[1].label.as_deref(), Some("The Salt Road, a chapter whose heading is far longer than…"));
    assert!(
        e.parts[1].text.ends_with("Caravans rest at Ambrel well.\nSecond line.\n\n- One\n- Two\n\nA | B"),
        "{}",
        e.parts[1].text
    );
}

#[test]
fn rtf_text_escapes_tables_and_info() {
    let rtf = r#"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0 Times;}}{\colortbl;\red0\green0\blue0;}
{\stylesheet{\s0 Normal;}{\s1\sbasedon0 heading 1;}}
{\info{\title Guild Report}{\author Oswin}{\creatim\yr2024\mo3\dy5\hr10\min20}}
{\*\generator Test;}{\pict\pngblip 89504e47}
\pard\s1 Lamps\par
\pard Caf\'e9 \u8364?5 and \u-10179?\u-8704? {\b bold}\line next\par
{\listtext\'95\tab}Oil\par
\pard\intbl Wicks\cell 44\cell\row
\pard{\field{\*\fldinst HYPERLINK "x"}{\fldrslt link text}}\par
}"#;
    let e = extract("r.rtf", rtf.as_bytes()).unwrap();
    assert_eq!(e.title.as_deref(), Some("Guild Report"));
    assert_eq!(meta(&e, "created"), Some("2024-03-05T10:20:00"));
    assert_eq!(e.parts[0].text, "# Lamps\n\nCafé €5 and 😀 bold\nnext\n\n- Oil\n\nWicks | 44\n\nlink text");
}

#[test]
fn ipynb_markdown_and_fenced_code() {
    let nb = r##"{"cells":[{"cell_type":"markdown","source":["# Tides\n","Harmonic fit."]},
        {"cell_type":"code","source":"x = 1  # metres","outputs":[{"text":"NOT INDEXED"}]},
        {"cell_type":"code","source":"print('```')"}],
        "metadata":{"kernelspec":{"language":"python"}},"nbformat":4}"##;
    let e = extract("t.ipynb", nb.as_bytes()).unwrap();
    assert_eq!(e.title.as_deref(), Some("Tides"));
    assert_eq!(
        e.parts[0].text,
        "# Tides\nHarmonic fit.\n\n```python\nx = 1  # metres\n```\n\n````python\nprint('```')\n````"
    );
}

#[test]
fn pdf_pages_columns_and_metadata() {
    let p1 = lines_at(72, 720, &["The harbour of Velmora", "exports saffron."]);
    // Two columns drawn one after the other; the right one starts back at the top.
    let p2 = lines_at(72, 720, &["Left column first line", "left column second line."])
        + &lines_at(320, 720, &["Right column first line", "right column second line."]);
    let p3 = "BT /F1 12 Tf 72 700 Td [(Kern)-30(ed)-600(apart)] TJ ET".to_string();
    let e = extract("atlas.pdf", &simple_pdf(&[p1, p2, p3])).unwrap();
    assert_eq!(e.title.as_deref(), Some("Test Atlas"));
    assert_eq!(meta(&e, "author"), Some("Ada"));
    assert_eq!(meta(&e, "created"), Some("2024-03-05T10:20:30+01:00"));
    assert_eq!(meta(&e, "pages"), Some("3"));
    assert_eq!(part(&e, Some("p. 1")), "The harbour of Velmora\nexports saffron.");
    assert_eq!(
        part(&e, Some("p. 2")),
        "Left column first line\nleft column second line.\n\nRight column first line\nright column second line."
    );
    assert_eq!(part(&e, Some("p. 3")), "Kerned apart");
}

#[test]
fn pdf_without_text_is_no_text() {
    let mut objs = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>".to_string(),
    ];
    for _ in 0..2 {
        objs.push("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im1 6 0 R >> >> /Contents 5 0 R >>".into());
    }
    objs.push(stream("q 500 0 0 700 50 50 cm /Im1 Do Q", ""));
    objs.push(stream(
        "\u{0}\u{ff}\u{0}\u{ff}",
        "/Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray /BitsPerComponent 8",
    ));
    let e = extract("scan.pdf", &make_pdf(&objs, 1, None)).unwrap_err();
    assert_eq!(e, ExtractError::NoText("no text layer on any of its 2 pages (a scan?); ragbox has no OCR yet".into()));
}

#[test]
fn formats_and_unknown_extensions() {
    assert!(FORMATS.contains(&"pdf") && !FORMATS.contains(&"doc"));
    for name in ["old.doc", "old.ppt", "old.xls", "noext", "x.txt"] {
        assert!(matches!(extract(name, b"data"), Err(ExtractError::Unsupported(_))), "{name}");
    }
}
