//! The tables ragbox keeps in a shared database, created and upgraded by
//! ragbox under an advisory lock so two first starts do not race.
//!
//! One set of tables serves every collection. A collection's chunk vectors
//! get their own partial HNSW index (cosine) once its model, and so its
//! dimension, is known: `embedding` has no fixed dimension in the table (two
//! collections may use different models), so the index is on
//! `embedding::vector(N)` and searches order by that same expression.

use crate::records::StoreError;
use postgres::Client;

/// The schema this ragbox writes; a database at a newer one is refused.
pub const SCHEMA_VERSION: i32 = 2;

/// The oldest pgvector with what ragbox needs (HNSW with cosine, binary I/O).
pub const MIN_PGVECTOR: (u32, u32) = (0, 7);

/// pgvector 0.8 scans an HNSW index on until a filtered query has its rows.
pub const ITERATIVE_PGVECTOR: (u32, u32) = (0, 8);

/// Key of the advisory lock held while the schema is created or upgraded.
const SCHEMA_LOCK: i64 = 0x7261_6762_6f78; // "ragbox"

/// Version 1: collections, documents, chunks and the change log.
const V1: &str = r#"
CREATE TABLE ragbox_schema (
    id integer PRIMARY KEY CHECK (id = 1),
    version integer NOT NULL
);
CREATE TABLE ragbox_collections (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL UNIQUE,
    model_id text,
    dimension integer,
    generation bigint NOT NULL DEFAULT 0,
    documents bigint NOT NULL DEFAULT 0,
    chunks bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE ragbox_documents (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    collection bigint NOT NULL REFERENCES ragbox_collections (id) ON DELETE CASCADE,
    path text COLLATE "C" NOT NULL,
    record jsonb NOT NULL,
    conversation_type text,
    date text,
    extension text NOT NULL,
    metadata jsonb NOT NULL,
    centroid vector,
    chunk_count integer NOT NULL,
    generation bigint NOT NULL,
    UNIQUE (collection, path)
);
CREATE INDEX ragbox_documents_generation ON ragbox_documents (collection, generation);
CREATE TABLE ragbox_chunks (
    document bigint NOT NULL REFERENCES ragbox_documents (id) ON DELETE CASCADE,
    ordinal integer NOT NULL,
    collection bigint NOT NULL,
    text text NOT NULL,
    start_byte bigint NOT NULL,
    end_byte bigint NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY (document, ordinal)
);
CREATE TABLE ragbox_changes (
    collection bigint NOT NULL REFERENCES ragbox_collections (id) ON DELETE CASCADE,
    generation bigint NOT NULL,
    path text COLLATE "C" NOT NULL,
    PRIMARY KEY (collection, generation, path)
);
INSERT INTO ragbox_schema (id, version) VALUES (1, 1);
"#;

/// Version 2: each collection remembers the workspace it belongs to (an
/// identity only that user's key gives the folder, and its path for messages).
const V2: &str = r#"
ALTER TABLE ragbox_collections ADD COLUMN workspace text, ADD COLUMN workspace_path text;
"#;

/// Each version's script, in order: `MIGRATIONS[v - 1]` brings v - 1 to v.
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [V1, V2];

/// What the database offers, read when a process first uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// PostgreSQL's version, as the server reports it.
    pub version: String,
    /// pgvector's version (major, minor).
    pub pgvector: (u32, u32),
    /// The schema version found (0: none yet).
    pub schema: i32,
    /// Whether the server is a read-only standby.
    pub standby: bool,
}

impl Server {
    /// Whether filtered HNSW scans continue until they have their rows.
    pub fn iterative(&self) -> bool {
        self.pgvector >= ITERATIVE_PGVECTOR
    }
}

/// Reads pgvector's and the schema's versions without changing anything
/// (a read-only replica answers this too).
pub fn inspect(client: &mut Client, server: &str) -> Result<Server, StoreError> {
    let setup = |message: String| StoreError::Setup { server: server.to_string(), message };
    let row = client
        .query_one(
            "SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector'),
                    (SELECT default_version FROM pg_available_extensions WHERE name = 'vector'),
                    to_regclass('ragbox_schema') IS NOT NULL,
                    current_setting('server_version'),
                    pg_is_in_recovery()",
            &[],
        )
        .map_err(|e| setup(e.to_string()))?;
    let installed: Option<String> = row.get(0);
    let available: Option<String> = row.get(1);
    let has_schema: bool = row.get(2);
    let version: String = row.get(3);
    let standby: bool = row.get(4);
    let pgvector = match (installed, available) {
        (Some(v), _) => parse_version(&v),
        (None, Some(_)) => (0, 0),
        (None, None) => {
            return Err(setup(
                "this PostgreSQL has no pgvector extension; install pgvector 0.7 or newer on the server \
                 (most managed services offer it: enable `vector` in the provider's console)"
                    .into(),
            ));
        }
    };
    let schema = if has_schema {
        client
            .query_one("SELECT version FROM ragbox_schema WHERE id = 1", &[])
            .map_err(|e| setup(e.to_string()))?
            .get(0)
    } else {
        0
    };
    if schema > SCHEMA_VERSION {
        return Err(setup(format!(
            "the database holds ragbox schema version {schema}, this ragbox knows {SCHEMA_VERSION}; upgrade ragbox"
        )));
    }
    Ok(Server { version, pgvector, schema, standby })
}

/// Creates the extension and the tables, or upgrades them, as needed.
pub fn ensure(client: &mut Client, server: &str) -> Result<Server, StoreError> {
    let found = inspect(client, server)?;
    if found.schema == SCHEMA_VERSION && found.pgvector != (0, 0) {
        return check_pgvector(found, server);
    }
    if found.standby {
        return Err(StoreError::Setup {
            server: server.to_string(),
            message: format!(
                "this server is a read-only replica and its ragbox schema is at version {} (this ragbox needs \
                 {SCHEMA_VERSION}); run ragbox once against the primary to create or upgrade it",
                found.schema
            ),
        });
    }
    let setup = |message: String| StoreError::Setup { server: server.to_string(), message };
    let mut txn = client.transaction().map_err(|e| setup(e.to_string()))?;
    txn.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK]).map_err(|e| setup(e.to_string()))?;
    if let Err(e) = txn.batch_execute("CREATE EXTENSION IF NOT EXISTS vector") {
        return Err(setup(format!(
            "cannot create the pgvector extension ({e}); ask the database's owner to run \
             `CREATE EXTENSION vector;` in this database"
        )));
    }
    // Read again under the lock: another process may have done it meanwhile.
    let has_schema: bool =
        txn.query_one("SELECT to_regclass('ragbox_schema') IS NOT NULL", &[]).map_err(|e| setup(e.to_string()))?.get(0);
    let mut version: i32 = if has_schema {
        txn.query_one("SELECT version FROM ragbox_schema WHERE id = 1", &[]).map_err(|e| setup(e.to_string()))?.get(0)
    } else {
        0
    };
    while version < SCHEMA_VERSION {
        let script = MIGRATIONS[version as usize];
        txn.batch_execute(script).map_err(|e| setup(format!("creating the schema (version {}): {e}", version + 1)))?;
        version += 1;
        txn.execute("UPDATE ragbox_schema SET version = $1 WHERE id = 1", &[&version])
            .map_err(|e| setup(e.to_string()))?;
    }
    txn.commit().map_err(|e| setup(e.to_string()))?;
    let found = inspect(client, server)?;
    check_pgvector(found, server)
}

/// The team's embedding cache (`postgres/embeddings.rs`), one table every
/// collection of the database shares. Made outside the versioned schema: an
/// older ragbox sharing the database never reads it, and must not be refused
/// a database for it.
const CACHE_TABLE: &str = r#"
CREATE TABLE IF NOT EXISTS ragbox_embedding_cache (
    key bytea PRIMARY KEY CHECK (octet_length(key) = 32),
    vector bytea NOT NULL,
    used_on date NOT NULL DEFAULT current_date
);
"#;

/// Makes the team's embedding cache table when missing, under the schema's lock.
pub fn ensure_cache_table(client: &mut Client, server: &str) -> Result<(), StoreError> {
    let setup = |message: String| StoreError::Setup { server: server.to_string(), message };
    let exists: bool = client
        .query_one("SELECT to_regclass('ragbox_embedding_cache') IS NOT NULL", &[])
        .map_err(|e| setup(e.to_string()))?
        .get(0);
    if exists {
        return Ok(());
    }
    let mut txn = client.transaction().map_err(|e| setup(e.to_string()))?;
    // Made during an index: a schema change holding the lock must not hold the index up.
    txn.batch_execute(super::embeddings::TEAM_TIMEOUTS).map_err(|e| setup(e.to_string()))?;
    txn.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK]).map_err(|e| setup(e.to_string()))?;
    txn.batch_execute(CACHE_TABLE).map_err(|e| setup(format!("creating the embedding cache table: {e}")))?;
    txn.commit().map_err(|e| setup(e.to_string()))
}

fn check_pgvector(found: Server, server: &str) -> Result<Server, StoreError> {
    if found.pgvector < MIN_PGVECTOR {
        let (major, minor) = found.pgvector;
        return Err(StoreError::Setup {
            server: server.to_string(),
            message: format!(
                "pgvector {major}.{minor} is too old: ragbox needs 0.7 or newer; run `ALTER EXTENSION vector UPDATE;`"
            ),
        });
    }
    Ok(found)
}

/// Creates collection `id`'s HNSW index for vectors of `dimension`.
pub fn create_vector_index(
    txn: &mut postgres::Transaction<'_>,
    id: i64,
    dimension: i32,
) -> Result<(), postgres::Error> {
    // Integers from our own rows: safe to write into the statement (an index
    // predicate and an expression cannot take parameters).
    txn.batch_execute(&format!(
        "CREATE INDEX IF NOT EXISTS ragbox_chunks_hnsw_{id} ON ragbox_chunks
         USING hnsw ((embedding::vector({dimension})) vector_cosine_ops) WHERE collection = {id}"
    ))
}

/// `0.8.1` → (0, 8).
fn parse_version(v: &str) -> (u32, u32) {
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions_compare_by_number() {
        assert_eq!(super::parse_version("0.8.1"), (0, 8));
        assert!(super::parse_version("0.10.0") > super::parse_version("0.8.1"));
        assert!(super::parse_version("0.6.2") < super::MIN_PGVECTOR);
    }
}
