//! `retriever.kind: pgvector`: the user's PostgreSQL table, queried directly, and the loader
//! behind `rageval index`.
//!
//! Scores are computed here in f64 from the stored vectors (the database only orders), so a
//! table loaded by `rageval index` scores exactly as the builtin index does:
//! cosine gives `1 - cosine distance`, inner_product the inner product, l2 `1 / (1 + distance)`.

use std::sync::Arc;

use futures_util::stream::{self, StreamExt};
use serde::{Deserialize, Serialize};
use tokio_postgres::config::Host;
use tokio_postgres::{Client, NoTls};

use super::{checked, Passage, RetrieveError, Retriever};
use crate::adapters::embed::{cosine, normalize, Embedder};
use crate::base::BoxFuture;

/// Queries in flight at once on the connection (tokio-postgres pipelines them).
const CONCURRENCY: usize = 8;

/// How the table's vectors are compared with the question's.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Distance {
    #[default]
    Cosine,
    InnerProduct,
    L2,
}

impl Distance {
    /// pgvector's operator for this distance.
    fn operator(self) -> &'static str {
        match self {
            Distance::Cosine => "<=>",
            Distance::InnerProduct => "<#>",
            Distance::L2 => "<->",
        }
    }

    /// The operator class of an HNSW index for this distance.
    fn ops(self) -> &'static str {
        match self {
            Distance::Cosine => "vector_cosine_ops",
            Distance::InnerProduct => "vector_ip_ops",
            Distance::L2 => "vector_l2_ops",
        }
    }

    /// The score of a stored vector `v` for the question's vector `q`: higher is better.
    fn score(self, q: &[f32], v: &[f32]) -> f64 {
        match self {
            Distance::Cosine => {
                let (mut q, mut v) = (q.to_vec(), v.to_vec());
                normalize(&mut q);
                normalize(&mut v);
                cosine(&q, &v)
            }
            Distance::InnerProduct => cosine(q, v),
            Distance::L2 => {
                let d: f64 = q
                    .iter()
                    .zip(v)
                    .map(|(&a, &b)| (f64::from(a) - f64::from(b)).powi(2))
                    .sum::<f64>()
                    .sqrt();
                1.0 / (1.0 + d)
            }
        }
    }
}

/// The columns of the table, by name.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Columns {
    pub id: String,
    pub source: String,
    /// Empty: the table has no heading column.
    pub heading: String,
    pub text: String,
    pub embedding: String,
}

impl Default for Columns {
    fn default() -> Self {
        Columns {
            id: "id".into(),
            source: "source".into(),
            heading: "heading".into(),
            text: "text".into(),
            embedding: "embedding".into(),
        }
    }
}

/// Where the table is and how to read it.
#[derive(Clone)]
pub struct PgTable {
    /// The connection string; holds the password, so it is only used to connect.
    dsn: String,
    /// The DSN as shown in messages: user, host, port and database, never the password.
    pub shown: String,
    pub table: String,
    pub columns: Columns,
    pub distance: Distance,
    /// `hnsw.ef_search` for the session (pgvector's default, 40, when unset).
    pub ef_search: Option<u32>,
    /// TLS as `sslmode` asks (see [`super::tls`]); `None` for `sslmode=disable`.
    tls: Option<Arc<rustls::ClientConfig>>,
    /// The DSN's password: hidden from the database's messages.
    secrets: crate::base::redact::Secrets,
}

impl PgTable {
    /// `dsn_env` names the variable that holds the DSN.
    pub fn from_env(
        dsn_env: &str,
        table: &str,
        columns: Columns,
        distance: Distance,
        ef_search: Option<u32>,
    ) -> Result<Self, RetrieveError> {
        let dsn = std::env::var(dsn_env)
            .ok()
            .filter(|d| !d.trim().is_empty())
            .ok_or_else(|| {
                RetrieveError(format!(
                    "`${dsn_env}` is not set: export the PostgreSQL connection string there (retriever.dsn_env)"
                ))
            })?;
        let not_a_dsn = || {
            RetrieveError(format!(
                "`${dsn_env}` is not a PostgreSQL connection string (postgresql://user@host:port/db)"
            ))
        };
        let split =
            super::tls::split(&dsn).map_err(|why| RetrieveError(format!("`${dsn_env}`: {why}")))?;
        let config: tokio_postgres::Config = split.dsn.parse().map_err(|_| not_a_dsn())?;
        let shown = show(&config);
        // The user is shown (`shown` names it); the password never is.
        let mut secrets = crate::base::redact::Secrets::default();
        if let Some(password) = config.get_password() {
            secrets.add(&String::from_utf8_lossy(password));
        }
        let tls = super::tls::client_config(&split)
            .map_err(|why| RetrieveError(format!("{shown}: {why}")))?
            .map(Arc::new);
        Ok(PgTable {
            tls,
            secrets,
            dsn: split.dsn,
            shown,
            table: table.to_string(),
            columns,
            distance,
            ef_search,
        })
    }

    /// Connect; the connection task runs in the background until the client is dropped.
    pub async fn connect(&self) -> Result<Client, RetrieveError> {
        let client = match &self.tls {
            None => {
                let (client, connection) = tokio_postgres::connect(&self.dsn, NoTls)
                    .await
                    .map_err(|e| self.fail("cannot connect", &e))?;
                tokio::spawn(connection);
                client
            }
            Some(config) => {
                let tls = tokio_postgres_rustls::MakeRustlsConnect::new((**config).clone());
                let (client, connection) = tokio_postgres::connect(&self.dsn, tls)
                    .await
                    .map_err(|e| self.fail("cannot connect", &e))?;
                tokio::spawn(connection);
                client
            }
        };
        if let Some(ef) = self.ef_search {
            client
                .batch_execute(&format!("SET hnsw.ef_search = {ef}"))
                .await
                .map_err(|e| self.fail("cannot set hnsw.ef_search", &e))?;
        }
        Ok(client)
    }

    /// `what` failed: one line with the database's reason, without the DSN.
    fn fail(&self, what: &str, e: &tokio_postgres::Error) -> RetrieveError {
        let reason = match e.as_db_error() {
            Some(db) => db.message().to_string(),
            None => {
                let mut msg = e.to_string();
                let mut source = std::error::Error::source(e);
                while let Some(s) = source {
                    msg = format!("{msg}: {s}");
                    source = s.source();
                }
                msg
            }
        };
        // A server or a proxy may quote the connection string: the password never shows.
        let reason = self.secrets.message(&reason);
        RetrieveError(format!("{what} at {}: {reason}", self.shown))
    }

    /// `schema.table` quoted as identifiers.
    fn quoted_table(&self) -> String {
        self.table
            .split('.')
            .map(ident)
            .collect::<Vec<_>>()
            .join(".")
    }

    /// The declared dimension of the embedding column; errors name a missing table or column.
    async fn dimension(&self, client: &Client) -> Result<Option<usize>, RetrieveError> {
        let exists: Option<String> = client
            .query_one("SELECT to_regclass($1)::text", &[&self.quoted_table()])
            .await
            .map_err(|e| self.fail("cannot look up the table", &e))?
            .get(0);
        if exists.is_none() {
            return Err(RetrieveError(format!(
                "table `{}` does not exist at {} (create it with `rageval index`)",
                self.table, self.shown
            )));
        }
        let rows = client
            .query(
                "SELECT attname::text, format_type(atttypid, atttypmod), atttypmod FROM pg_attribute \
                 WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped",
                &[&self.quoted_table()],
            )
            .await
            .map_err(|e| self.fail("cannot read the table's columns", &e))?;
        let c = &self.columns;
        let wanted = [
            ("id", &c.id),
            ("source", &c.source),
            ("heading", &c.heading),
            ("text", &c.text),
            ("embedding", &c.embedding),
        ];
        for (field, name) in wanted {
            if name.is_empty() && field == "heading" {
                continue;
            }
            if !rows.iter().any(|r| r.get::<_, String>(0) == *name) {
                return Err(RetrieveError(format!(
                    "table `{}` has no column `{name}` (retriever.columns.{field})",
                    self.table
                )));
            }
        }
        let row = rows
            .iter()
            .find(|r| r.get::<_, String>(0) == c.embedding)
            .expect("checked above");
        let ty: String = row.get(1);
        if !ty.starts_with("vector") {
            return Err(RetrieveError(format!(
                "column `{}` of table `{}` is `{ty}`, not a pgvector `vector`",
                c.embedding, self.table
            )));
        }
        let typmod: i32 = row.get(2);
        Ok(usize::try_from(typmod).ok().filter(|&d| d > 0))
    }
}

/// `"name"`, with embedded quotes doubled.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `postgresql://user@host:port/db` from a parsed DSN: never the password.
fn show(c: &tokio_postgres::Config) -> String {
    let host = match c.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        #[cfg(unix)]
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = c.get_ports().first().copied().unwrap_or(5432);
    let user = c.get_user().map(|u| format!("{u}@")).unwrap_or_default();
    let db = c.get_dbname().unwrap_or("");
    format!("postgresql://{user}{host}:{port}/{db}")
}

/// The pgvector retriever: questions embedded with the configured embedder, then one query each.
pub struct PgRetriever {
    table: PgTable,
    client: Client,
    embedder: Arc<dyn Embedder>,
    select: String,
}

impl PgRetriever {
    /// Connect and check the table: it exists, has the columns, and its dimension is the
    /// embedder's.
    pub async fn open(table: PgTable, embedder: Arc<dyn Embedder>) -> Result<Self, RetrieveError> {
        let client = table.connect().await?;
        let declared = table.dimension(&client).await?;
        let probe = embedder
            .embed(&["rageval dimension probe".to_string()])
            .await
            .map_err(|e| RetrieveError(format!("cannot embed: {e}")))?;
        let dim = probe.first().map_or(0, Vec::len);
        if let Some(declared) = declared {
            if declared != dim {
                return Err(RetrieveError(format!(
                    "column `{}` of table `{}` holds {declared}-dimensional vectors, the embedder `{}` gives {dim}: reload the table with `rageval index --replace` or configure the embedder it was built with",
                    table.columns.embedding,
                    table.table,
                    embedder.model()
                )));
            }
        }
        let c = &table.columns;
        let heading = if c.heading.is_empty() {
            "NULL::text".to_string()
        } else {
            format!("{}::text", ident(&c.heading))
        };
        let select = format!(
            "SELECT {}::text, {}::text, {heading}, {}::text, {emb} FROM {} ORDER BY {emb} {} $1, {} LIMIT $2",
            ident(&c.id),
            ident(&c.source),
            ident(&c.text),
            table.quoted_table(),
            table.distance.operator(),
            ident(&c.id),
            emb = ident(&c.embedding),
        );
        Ok(PgRetriever {
            table,
            client,
            embedder,
            select,
        })
    }

    async fn search(&self, vector: &[f32], k: usize) -> Result<Vec<Passage>, RetrieveError> {
        let query = pgvector::Vector::from(vector.to_vec());
        let limit = i64::try_from(k).unwrap_or(i64::MAX);
        let rows = self
            .client
            .query(&self.select, &[&query, &limit])
            .await
            .map_err(|e| self.table.fail("the search failed", &e))?;
        // A NULL id or embedding names no passage: the reply is refused, naming the column and
        // how many of the rows hold one (a NULL source, heading or text is empty text).
        let columns = &self.table.columns;
        let null_ids = rows
            .iter()
            .filter(|r| matches!(r.try_get::<_, Option<String>>(0), Ok(None)))
            .count();
        let null_embeddings = rows
            .iter()
            .filter(|r| matches!(r.try_get::<_, Option<pgvector::Vector>>(4), Ok(None)))
            .count();
        for (nulls, column) in [
            (null_ids, &columns.id),
            (null_embeddings, &columns.embedding),
        ] {
            if nulls > 0 {
                return Err(RetrieveError(format!(
                    "table `{}`: {nulls} of the {} rows found hold NULL in column `{column}`; every row needs an id and an embedding",
                    self.table.table,
                    rows.len()
                )));
            }
        }
        let text = |r: &tokio_postgres::Row, i: usize| {
            r.try_get::<_, Option<String>>(i)
                .ok()
                .flatten()
                .unwrap_or_default()
        };
        let hits = rows
            .iter()
            .map(|r| {
                let v: pgvector::Vector = r.get(4);
                Passage {
                    id: text(r, 0),
                    source: text(r, 1),
                    heading: r.try_get::<_, Option<String>>(2).ok().flatten(),
                    text: text(r, 3),
                    score: self.table.distance.score(vector, v.as_slice()),
                }
            })
            .collect();
        checked(hits, k)
    }
}

impl Retriever for PgRetriever {
    fn describe(&self) -> String {
        format!("{} table {}", self.table.shown, self.table.table)
    }

    fn retrieve<'a>(
        &'a self,
        queries: &'a [String],
        k: usize,
    ) -> BoxFuture<'a, Vec<Result<Vec<Passage>, RetrieveError>>> {
        Box::pin(async move {
            let vectors = match self.embedder.embed(queries).await {
                Ok(v) => v,
                Err(e) => {
                    let e = RetrieveError(format!("cannot embed the questions: {e}"));
                    return queries.iter().map(|_| Err(e.clone())).collect();
                }
            };
            let calls: Vec<_> = vectors.iter().map(|v| self.search(v, k)).collect();
            stream::iter(calls).buffered(CONCURRENCY).collect().await
        })
    }
}

/// One row for [`load`]: a chunk and its vector.
pub struct Row<'a> {
    pub id: &'a str,
    pub source: &'a str,
    pub heading: &'a str,
    pub text: &'a str,
    pub embedding: Vec<f32>,
}

/// Create the table and its HNSW index when missing (`replace`: drop it first) and insert
/// `rows` in one transaction. A table that already holds rows is left alone unless `replace`.
pub async fn load(
    table: &PgTable,
    rows: Vec<Row<'_>>,
    replace: bool,
) -> Result<u64, RetrieveError> {
    let mut client = table.connect().await?;
    let dim = rows.first().map_or(0, |r| r.embedding.len());
    let t = table.quoted_table();
    let c = &table.columns;
    let tx = client
        .transaction()
        .await
        .map_err(|e| table.fail("cannot start a transaction", &e))?;
    if replace {
        tx.batch_execute(&format!("DROP TABLE IF EXISTS {t}"))
            .await
            .map_err(|e| table.fail("cannot drop the table", &e))?;
    }
    let heading = if c.heading.is_empty() {
        String::new()
    } else {
        format!("{} text, ", ident(&c.heading))
    };
    let index_name = ident(&format!(
        "{}_{}_hnsw",
        table.table.rsplit('.').next().unwrap_or(&table.table),
        c.embedding
    ));
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {t} ({} text PRIMARY KEY, {} text NOT NULL, {heading}{} text NOT NULL, {} vector({dim}) NOT NULL)",
        ident(&c.id),
        ident(&c.source),
        ident(&c.text),
        ident(&c.embedding),
    ))
    .await
    .map_err(|e| table.fail("cannot create the table", &e))?;
    let held: i64 = tx
        .query_one(&format!("SELECT count(*) FROM {t}"), &[])
        .await
        .map_err(|e| table.fail("cannot count the table's rows", &e))?
        .get(0);
    if held > 0 {
        return Err(RetrieveError(format!(
            "table `{}` already holds {held} rows: pass `--replace` to reload it",
            table.table
        )));
    }
    let (cols, params) = if c.heading.is_empty() {
        (
            format!(
                "{}, {}, {}, {}",
                ident(&c.id),
                ident(&c.source),
                ident(&c.text),
                ident(&c.embedding)
            ),
            "$1, $2, $4, $5",
        )
    } else {
        (
            format!(
                "{}, {}, {}, {}, {}",
                ident(&c.id),
                ident(&c.source),
                ident(&c.heading),
                ident(&c.text),
                ident(&c.embedding)
            ),
            "$1, $2, $3, $4, $5",
        )
    };
    let insert = tx
        .prepare(&format!("INSERT INTO {t} ({cols}) VALUES ({params})"))
        .await
        .map_err(|e| table.fail("cannot prepare the insert", &e))?;
    // Inserts are pipelined on the connection, a few hundred in flight.
    let inserts: Vec<_> = rows
        .iter()
        .map(|r| {
            let (tx, insert) = (&tx, &insert);
            async move {
                let v = pgvector::Vector::from(r.embedding.clone());
                tx.execute(insert, &[&r.id, &r.source, &r.heading, &r.text, &v])
                    .await
                    .map_err(|e| table.fail(&format!("cannot insert `{}`", r.id), &e))
            }
        })
        .collect();
    let done: Vec<u64> = stream::iter(inserts)
        .buffered(256)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_, _>>()?;
    let n = done.iter().sum();
    // Built once over the loaded rows: far faster than updating it row by row.
    tx.batch_execute(&format!(
        "CREATE INDEX IF NOT EXISTS {index_name} ON {t} USING hnsw ({} {})",
        ident(&c.embedding),
        table.distance.ops(),
    ))
    .await
    .map_err(|e| table.fail("cannot create the HNSW index", &e))?;
    tx.commit()
        .await
        .map_err(|e| table.fail("cannot commit", &e))?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_per_distance() {
        let q = [1.0, 0.0];
        assert_eq!(Distance::Cosine.score(&q, &[2.0, 0.0]), 1.0);
        assert_eq!(Distance::Cosine.score(&q, &[0.0, 3.0]), 0.0);
        assert_eq!(Distance::InnerProduct.score(&q, &[2.0, 5.0]), 2.0);
        assert_eq!(Distance::L2.score(&q, &[1.0, 1.0]), 0.5);
    }

    #[test]
    fn a_shown_dsn_never_holds_the_password() {
        let c: tokio_postgres::Config =
            "postgresql://app:s3cret@db.example:6543/rag?sslmode=disable"
                .parse()
                .unwrap();
        assert_eq!(show(&c), "postgresql://app@db.example:6543/rag");
        let c: tokio_postgres::Config = "host=db user=app password=s3cret dbname=rag"
            .parse()
            .unwrap();
        assert_eq!(show(&c), "postgresql://app@db:5432/rag");
    }

    #[test]
    fn the_dsn_password_is_hidden_from_the_database_messages() {
        for (var, dsn) in [
            (
                "RAGEVAL_TEST_PG_SECRET_URL",
                "postgresql://app:s3cret-pw@127.0.0.1:1/rag?sslmode=disable",
            ),
            (
                "RAGEVAL_TEST_PG_SECRET_KV",
                "host=127.0.0.1 user=app password=s3cret-pw dbname=rag sslmode=disable",
            ),
        ] {
            std::env::set_var(var, dsn);
            let t =
                PgTable::from_env(var, "t", Columns::default(), Distance::Cosine, None).unwrap();
            assert_eq!(
                t.secrets
                    .message("no pg_hba.conf entry for password s3cret-pw"),
                "no pg_hba.conf entry for password <redacted>"
            );
        }
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(ident("we\"ird"), "\"we\"\"ird\"");
    }
}
