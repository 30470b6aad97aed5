//! The private PostgreSQL server of a run and its scratch databases.
//!
//! Every section gets a fresh database on the same server. Databases are not dropped:
//! the whole data folder goes when the server stops.

use anyhow::{Context, Result};
use kineticd::devdb::PrivatePostgres;
use kineticd::store::{self, teams};
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use crate::{OWNER, TEAM};

pub struct Server {
    pg: PrivatePostgres,
    durable: bool,
}

impl Server {
    /// A temporary ephemeral server, or with `KBENCH_DURABLE` set a durable one (`fsync`
    /// and `synchronous_commit` on, as in production) in a folder removed on stop.
    pub async fn start() -> Result<Server> {
        let durable = std::env::var_os("KBENCH_DURABLE").is_some();
        let pg = if durable {
            let dir = std::env::temp_dir().join(format!("kbench-pg-{}", std::process::id()));
            PrivatePostgres::start(&dir).await
        } else {
            PrivatePostgres::start_temporary().await
        }
        .context("starting a private PostgreSQL")?;
        Ok(Server { pg, durable })
    }

    pub fn kind(&self) -> &'static str {
        if self.durable {
            "private-durable (fsync=on, synchronous_commit=on)"
        } else {
            "private-temporary (fsync=off, synchronous_commit=off)"
        }
    }

    pub fn url(&self, db: &str) -> String {
        self.pg.url(db)
    }

    /// Pid of the postmaster (for the CPU accounting).
    pub fn pid(&self) -> u32 {
        self.pg.pid()
    }

    /// A new empty database `kbench_<what>_<random>`; returns its name.
    pub async fn create_db(&self, what: &str) -> Result<String> {
        let name = format!(
            "kbench_{what}_{}",
            &Uuid::new_v4().simple().to_string()[..12]
        );
        self.pg.ensure_database(&name).await?;
        Ok(name)
    }

    /// A new migrated database holding the bench team; returns its name.
    pub async fn create_kineticd_db(&self, what: &str) -> Result<String> {
        let name = self.create_db(what).await?;
        let db = store::connect(&self.url(&name), 2).await?;
        store::migrate(&db).await?;
        let mut tx = db.begin().await?;
        teams::insert_team(&mut tx, TEAM, "Bench", &[], OWNER).await?;
        tx.commit().await?;
        db.close().await;
        Ok(name)
    }

    /// Transactions (committed and rolled back) of database `name` so far, as counted by
    /// the statistics collector: backends report when idle, at most once a second, and
    /// when they exit.
    pub async fn xacts(&self, name: &str) -> Result<i64> {
        let mut admin = PgConnection::connect(&self.url("postgres")).await?;
        let n: i64 = sqlx::query_scalar(
            "SELECT (xact_commit + xact_rollback)::int8 FROM pg_stat_database WHERE datname = $1",
        )
        .bind(name)
        .fetch_one(&mut admin)
        .await?;
        admin.close().await?;
        Ok(n)
    }

    pub async fn stop(self) {
        let dir = self.pg.data_dir().to_path_buf();
        if let Err(e) = self.pg.stop().await {
            eprintln!("warning: private PostgreSQL did not stop cleanly: {e}");
        } else if self.durable {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
