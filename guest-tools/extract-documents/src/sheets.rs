//! Spreadsheets: XLSX through calamine's streaming cell reader, and the row layout shared with
//! ODS. Rows become `a | b | c` lines; empty rows and trailing empty cells are left out.

use std::io::Cursor;

use calamine::{DataRef, Reader, Xlsx, XlsxError};

use crate::model::{Builder, ExtractError, Extracted, Result, malformed};
use crate::ooxml::core_properties;
use crate::zipx::Zip;

/// Most non-empty cells read from one sheet.
pub const MAX_CELLS: usize = 1_000_000;
/// Most cells of any kind (empty ones too) visited in one sheet, so a sheet of a million empty
/// cells ends quickly.
pub const MAX_VISITED: usize = 4_000_000;
/// Empty columns kept between two cells of a row; a wider gap shows as this many.
const MAX_GAP: u32 = 8;

/// Builds the rows of one sheet from cells given in row order.
pub struct Rows {
    row: Option<u32>,
    cells: Vec<(u32, String)>,
    /// Non-empty cells taken so far.
    pub taken: usize,
    /// Whether the sheet was cut at [`MAX_CELLS`] or [`MAX_VISITED`].
    pub cut: bool,
    visited: usize,
}

impl Default for Rows {
    fn default() -> Self {
        Self::new()
    }
}

impl Rows {
    /// An empty sheet.
    pub fn new() -> Self {
        Self { row: None, cells: Vec::new(), taken: 0, cut: false, visited: 0 }
    }

    /// Counts a visited cell; false once the sheet has had enough.
    pub fn visit(&mut self, n: usize) -> bool {
        self.visited = self.visited.saturating_add(n);
        if self.visited > MAX_VISITED || self.taken >= MAX_CELLS {
            self.cut = true;
        }
        !self.cut
    }

    /// Adds the cell at (`row`, `col`), writing the previous row out when `row` moves on.
    pub fn cell(&mut self, b: &mut Builder, row: u32, col: u32, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        if self.row != Some(row) {
            self.flush(b);
            self.row = Some(row);
        }
        self.taken += 1;
        self.cells.push((col, text.trim().to_string()));
    }

    /// Writes the pending row out.
    pub fn flush(&mut self, b: &mut Builder) {
        if self.cells.is_empty() {
            return;
        }
        self.cells.sort_by_key(|(c, _)| *c);
        let mut line: Vec<&str> = Vec::with_capacity(self.cells.len());
        let mut next = self.cells[0].0;
        for (col, text) in &self.cells {
            let gap = col.saturating_sub(next).min(MAX_GAP);
            line.extend(std::iter::repeat_n("", gap as usize));
            line.push(text);
            next = col.saturating_add(1);
        }
        b.row(&line);
        self.cells.clear();
    }

    /// Writes the pending row out and says if the sheet was cut.
    pub fn finish(&mut self, b: &mut Builder) {
        self.flush(b);
        if self.cut {
            b.para(&format!("[ragbox: this sheet was cut after {} cells; the rest is not indexed]", self.taken));
        }
    }
}

fn float_text(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 { format!("{}", f as i64) } else { format!("{f}") }
}

fn cell_text(v: &DataRef) -> String {
    match v {
        DataRef::Int(i) => i.to_string(),
        DataRef::Float(f) => float_text(*f),
        DataRef::String(s) => s.clone(),
        DataRef::SharedString(s) => (*s).to_string(),
        DataRef::Bool(b) => if *b { "TRUE" } else { "FALSE" }.to_string(),
        DataRef::DateTime(d) if d.is_datetime() => {
            let (y, mo, da, h, mi, s, _) = d.to_ymd_hms_milli();
            if (h, mi, s) == (0, 0, 0) {
                format!("{y:04}-{mo:02}-{da:02}")
            } else {
                format!("{y:04}-{mo:02}-{da:02}T{h:02}:{mi:02}:{s:02}")
            }
        }
        DataRef::DateTime(d) => float_text(d.as_f64()),
        DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => s.clone(),
        DataRef::Error(e) => e.to_string(),
        DataRef::Empty => String::new(),
    }
}

fn xlsx_error(e: XlsxError) -> ExtractError {
    match e {
        XlsxError::Password => ExtractError::Unsupported("the workbook is password-protected".into()),
        e => malformed(format!("XLSX does not read: {e}")),
    }
}

/// The text of an XLSX file: one part per sheet, labelled `sheet NAME`.
pub fn xlsx(bytes: &[u8]) -> Result<Extracted> {
    let mut zip = Zip::open(bytes, "XLSX")?;
    // calamine reads entries itself; zip never inflates an entry past its declared size, so
    // checking those first bounds what calamine can be made to inflate.
    zip.check_declared_sizes()?;
    if !zip.has("xl/workbook.xml") {
        return Err(malformed("not an XLSX file: it has no xl/workbook.xml"));
    }
    let (title, meta) = core_properties(&mut zip)?;
    let mut wb: Xlsx<_> = Xlsx::new(Cursor::new(bytes)).map_err(xlsx_error)?;
    let mut b = Builder::new();
    for name in wb.sheet_names() {
        if b.full() {
            break;
        }
        b.start_part(Some(format!("sheet {name}")));
        let mut reader = match wb.worksheet_cells_reader(&name) {
            Ok(r) => r,
            // A chart sheet or a sheet whose part is missing: nothing to read there.
            Err(XlsxError::WorksheetNotFound(_)) => continue,
            Err(e) => return Err(xlsx_error(e)),
        };
        let mut rows = Rows::new();
        while rows.visit(1) && !b.full() {
            match reader.next_cell() {
                Ok(Some(cell)) => {
                    let (r, c) = cell.get_position();
                    rows.cell(&mut b, r, c, &cell_text(cell.get_value()));
                }
                Ok(None) => break,
                Err(e) => return Err(xlsx_error(e)),
            }
        }
        rows.finish(&mut b);
    }
    let mut meta = meta;
    meta.push(("sheets".into(), wb.sheet_names().len().to_string()));
    Ok(b.into_extracted(title, meta))
}
