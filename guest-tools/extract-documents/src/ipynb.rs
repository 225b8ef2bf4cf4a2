//! Jupyter notebooks: markdown cells as they are, code cells fenced with the notebook's
//! language; outputs are left out. One part.

use serde_json::Value;

use crate::model::{Builder, Extracted, Result, first_heading, malformed, push_meta};

/// A cell's source: a string or a list of strings.
fn source(cell: &Value) -> String {
    match cell.get("source") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(lines)) => lines.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

/// The text of a `.ipynb` file.
pub fn ipynb(bytes: &[u8]) -> Result<Extracted> {
    // serde_json refuses nesting deeper than 128, so a hostile file ends in an error.
    let nb: Value = serde_json::from_slice(bytes).map_err(|e| malformed(format!("not a notebook (JSON): {e}")))?;
    let cells = nb
        .get("cells")
        .and_then(Value::as_array)
        .or_else(|| {
            // nbformat 3 kept cells in worksheets.
            nb.pointer("/worksheets/0/cells").and_then(Value::as_array)
        })
        .ok_or_else(|| malformed("not a notebook: it has no cells"))?;
    let lang = nb
        .pointer("/metadata/kernelspec/language")
        .or_else(|| nb.pointer("/metadata/language_info/name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut b = Builder::new();
    let mut heading = None;
    for cell in cells {
        if b.full() {
            break;
        }
        let src = source(cell);
        let src = src.trim_end();
        if src.trim().is_empty() {
            continue;
        }
        match cell.get("cell_type").and_then(Value::as_str) {
            Some("code") => {
                // A fence longer than any backtick run in the code keeps it closed.
                let ticks = src.split(|c| c != '`').map(str::len).max().unwrap_or(0).max(2) + 1;
                let fence = "`".repeat(ticks);
                b.para(&format!("{fence}{lang}\n{src}\n{fence}"));
            }
            _ => {
                // The title is the first Markdown heading; a `#` comment in code is not one.
                if heading.is_none() {
                    heading = first_heading(&[crate::model::Part { label: None, text: src.to_string() }]);
                }
                b.para(src)
            }
        }
    }
    let mut meta = Vec::new();
    push_meta(&mut meta, "language", Some(lang));
    push_meta(&mut meta, "cells", Some(cells.len().to_string()));
    let parts = b.finish();
    let title = nb.pointer("/metadata/title").and_then(Value::as_str).map(str::to_string).or(heading);
    Ok(Extracted { title, metadata: meta, parts })
}
