//! The document filter as SQL over `ragbox_documents d`, with the same
//! meaning as [`Filter::matches`]: ASCII case folding is done here, on both
//! the stored columns (at write) and the wanted values, so the database's
//! collation plays no part.

use crate::index::Filter;
use crate::records::DocumentRecord;
use postgres::types::ToSql;

/// SQL conditions and the parameters they name, numbered after those a
/// statement already has.
#[derive(Debug, Default)]
pub struct Conditions {
    /// ` AND …` clauses, empty when the filter lets everything through.
    pub sql: String,
    /// Their parameters, in order.
    pub params: Vec<Box<dyn ToSql + Sync + Send>>,
}

impl Conditions {
    /// `filter` as conditions on `d`, its parameters numbered from `first`.
    pub fn of(filter: &Filter, first: usize) -> Self {
        let mut out = Conditions::default();
        let param = |out: &mut Conditions, value: Box<dyn ToSql + Sync + Send>| {
            out.params.push(value);
            format!("${}", first + out.params.len() - 1)
        };
        if let Some(kind) = &filter.conversation_type {
            let p = param(&mut out, Box::new(kind.to_ascii_lowercase()));
            out.sql.push_str(&format!(" AND d.conversation_type = {p}"));
        }
        if let Some(range) = &filter.date_range {
            let p = param(&mut out, Box::new(range.clone()));
            out.sql.push_str(&format!(" AND (d.date = {p} OR starts_with(d.date, {p} || '-'))"));
        }
        if let Some(prefix) = &filter.path_prefix {
            let prefix = prefix.trim_start_matches("./");
            if !prefix.is_empty() {
                let p = param(&mut out, Box::new(prefix.to_string()));
                if prefix.ends_with('/') {
                    out.sql.push_str(&format!(" AND starts_with(d.path, {p})"));
                } else {
                    out.sql.push_str(&format!(" AND (d.path = {p} OR starts_with(d.path, {p} || '/'))"));
                }
            }
        }
        if !filter.extensions.is_empty() {
            let wanted: Vec<String> =
                filter.extensions.iter().map(|e| e.trim_start_matches('.').to_ascii_lowercase()).collect();
            let p = param(&mut out, Box::new(wanted));
            out.sql.push_str(&format!(" AND d.extension = ANY({p})"));
        }
        for (key, value) in &filter.metadata {
            let k = param(&mut out, Box::new(key.clone()));
            let v = param(&mut out, Box::new(value.clone()));
            out.sql.push_str(&format!(" AND d.metadata ->> {k} = {v}"));
        }
        out
    }

    /// The parameters as the driver takes them, after `before`.
    pub fn with<'a>(&'a self, before: &[&'a (dyn ToSql + Sync)]) -> Vec<&'a (dyn ToSql + Sync)> {
        let mut all = before.to_vec();
        all.extend(self.params.iter().map(|p| p.as_ref() as &(dyn ToSql + Sync)));
        all
    }
}

/// The columns a filter reads, from a document as written.
pub struct FilterColumns {
    /// Conversation type, ASCII-lowercased.
    pub conversation_type: Option<String>,
    /// The extension of the path's last part, ASCII-lowercased; empty without one.
    pub extension: String,
}

impl FilterColumns {
    /// What `record`'s filter columns hold.
    pub fn of(record: &DocumentRecord) -> Self {
        let extension = record.path.rsplit_once('.').map(|(_, e)| e).filter(|e| !e.contains('/')).unwrap_or("");
        Self {
            conversation_type: record.conversation_type.as_ref().map(|t| t.to_ascii_lowercase()),
            extension: extension.to_ascii_lowercase(),
        }
    }
}
