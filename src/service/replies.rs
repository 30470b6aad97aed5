//! AIP-155 for the mutations that answer at once (team, member and profile changes,
//! cancel): a retry with the same request id and the same request gets the first answer
//! and changes nothing; the same id with another request is 409 REQUEST_ID_REUSED.
//!
//! Invariant: the key is claimed and the answer recorded inside the mutation's own
//! transaction ([`begin`] then [`commit`]), so a concurrent identical request waits for
//! the first and then replays its answer, and a mutation that fails leaves no key (its
//! retry runs again). Without a key, [`begin`] and [`commit`] are a plain transaction.

use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::{Postgres, Transaction};

use super::{Error, Result};
use crate::ops::queue::{IDEMPOTENCY_TTL_HOURS, Idempotency};
use crate::store::{self, Db, StoreError, replies};

/// How a mutation under a request id begins.
pub enum Begun<T> {
    /// The request was answered before: its answer, nothing else to do.
    Replay(T),
    /// A new request: its transaction, with the key (if any) claimed in it.
    Go(Transaction<'static, Postgres>),
}

fn reused(key: &str) -> Error {
    Error::precondition(
        "REQUEST_ID_REUSED",
        format!(
            "requestId / Idempotency-Key {key:?} was already used for a different request; use a new key"
        ),
    )
}

fn replay<T: DeserializeOwned>(idem: &Idempotency, a: replies::Answered) -> Result<T> {
    if a.fingerprint != idem.fingerprint {
        return Err(reused(&idem.key));
    }
    Ok(replies::decode(&idem.key, a.reply)?)
}

/// The answer an earlier request with this key got, if any (read before any check that
/// talks to the cloud, so a retry costs one read).
pub async fn replayed<T: DeserializeOwned>(
    db: &Db,
    caller: &str,
    idem: Option<&Idempotency>,
) -> Result<Option<T>> {
    let Some(idem) = idem else { return Ok(None) };
    match replies::answered(db, caller, &idem.key, IDEMPOTENCY_TTL_HOURS).await? {
        Some(a) => replay(idem, a).map(Some),
        None => Ok(None),
    }
}

/// Begin the mutation's transaction, claiming the key in it.
pub async fn begin<T: DeserializeOwned>(
    db: &Db,
    caller: &str,
    idem: Option<&Idempotency>,
) -> Result<Begun<T>> {
    let mut tx = db.begin().await.map_err(StoreError::from)?;
    let Some(idem) = idem else {
        return Ok(Begun::Go(tx));
    };
    let held = replies::claim(
        &mut tx,
        caller,
        &idem.key,
        &idem.fingerprint,
        IDEMPOTENCY_TTL_HOURS,
    )
    .await?;
    match held {
        None => Ok(Begun::Go(tx)),
        Some(a) => replay(idem, a).map(Begun::Replay),
    }
}

/// Record `answer` under the key and commit the mutation.
pub async fn commit<T: Serialize>(
    mut tx: Transaction<'static, Postgres>,
    caller: &str,
    idem: Option<&Idempotency>,
    answer: &T,
) -> Result<()> {
    if let Some(idem) = idem {
        let reply = serde_json::to_value(answer).map_err(|e| Error::internal(&e))?;
        store::replies::record(&mut tx, caller, &idem.key, &reply).await?;
    }
    tx.commit().await.map_err(StoreError::from)?;
    Ok(())
}

/// Keep `answer` under the key after a mutation that ran in a transaction of its own
/// (cancel, itself idempotent): a concurrent identical request that kept its answer
/// first wins, and both callers get that one.
pub async fn remember<T: Serialize + DeserializeOwned>(
    db: &Db,
    caller: &str,
    idem: Option<&Idempotency>,
    answer: T,
) -> Result<T> {
    match begin(db, caller, idem).await? {
        Begun::Replay(first) => Ok(first),
        Begun::Go(tx) => {
            commit(tx, caller, idem, &answer).await?;
            Ok(answer)
        }
    }
}

/// `replay_or_go!(db, who, idem)`: return the earlier answer from the enclosing function
/// when the key was answered before (a read, before any check that would take locks).
macro_rules! replay_or_go {
    ($db:expr, $who:expr, $idem:expr) => {
        if let Some(answer) = $crate::service::replies::replayed($db, $who, $idem).await? {
            return Ok(answer);
        }
    };
}
pub(crate) use replay_or_go;

/// `let mut tx = begin_or_replay!(db, who, idem);`: [`begin`] the mutation's
/// transaction, or return the earlier answer from the enclosing function.
macro_rules! begin_or_replay {
    ($db:expr, $who:expr, $idem:expr) => {
        match $crate::service::replies::begin($db, $who, $idem).await? {
            $crate::service::replies::Begun::Replay(answer) => return Ok(answer),
            $crate::service::replies::Begun::Go(tx) => tx,
        }
    };
}
pub(crate) use begin_or_replay;
