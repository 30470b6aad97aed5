//! NOOP: the engine's test workflow (reachable only in development or test mode).
//! N steps, each optionally sleeping, failing retryably a number of times, failing
//! terminally, or hanging like a long cloud call; each step's effect is a row in
//! `noop_effects` committed with the step's completion.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::domain::OperationType;
use crate::ops::kinds::OperationKind;
use crate::ops::record_states::Records;
use crate::ops::steps::{RpcCode, StepError, StepRecord};
use crate::store::StoreError;
use crate::store::operations;

use super::StepCtx;
use super::cluster::Env;

/// What the test asks of each NOOP step.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct NoopSpec {
    /// Number of steps (1-100).
    pub steps: u32,
    /// Sleep in every step, milliseconds.
    #[schema(format = Int32)]
    pub step_millis: u64,
    /// Run all steps in parallel instead of as a chain.
    pub parallel: bool,
    /// Step index -> number of retryable failures (UNAVAILABLE) before success.
    pub fail_retryable: std::collections::BTreeMap<String, u32>,
    /// Step index that fails terminally (QUOTA_INSUFFICIENT).
    pub fail_terminal_at: Option<u32>,
    /// Step index that waits (like a long cloud call) until the operation is cancelled.
    pub hang_at: Option<u32>,
}

impl NoopSpec {
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=100).contains(&self.steps) {
            return Err("steps must be between 1 and 100".into());
        }
        if self.step_millis > 60_000 {
            return Err("stepMillis must be at most 60000".into());
        }
        Ok(())
    }

    /// The DAG: a chain `step-0 -> step-1 -> ...`, or independent steps.
    pub fn steps(&self) -> Vec<StepRecord> {
        (0..self.steps)
            .map(|i| {
                let id = format!("step-{i}");
                // Only what differs from the defaults: the row is rewritten per step.
                let mut input = serde_json::Map::new();
                input.insert("index".into(), json!(i));
                if self.step_millis > 0 {
                    input.insert("millis".into(), json!(self.step_millis));
                }
                if let Some(n) = self.fail_retryable.get(&i.to_string()) {
                    input.insert("failRetryable".into(), json!(n));
                }
                if self.fail_terminal_at == Some(i) {
                    input.insert("failTerminal".into(), json!(true));
                }
                if self.hang_at == Some(i) {
                    input.insert("hang".into(), json!(true));
                }
                let mut s = StepRecord::new(&id, format!("no-op step {i}"))
                    .with_input(Value::Object(input));
                if !self.parallel && i > 0 {
                    let prev = format!("step-{}", i - 1);
                    s = s.after(&[&prev]).reading(&[&prev]);
                }
                s
            })
            .collect()
    }
}

/// What one NOOP step was asked to do (its stored input).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NoopStep {
    pub index: u32,
    pub millis: u64,
    pub fail_retryable: u32,
    pub fail_terminal: bool,
    pub hang: bool,
}

/// The NOOP response: how many steps ran.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct NoopResponse {
    pub steps: usize,
}

pub struct Noop;

impl OperationKind for Noop {
    const TYPE: OperationType = OperationType::Noop;
    const RECORDS: Records = Records::Untouched;
    const TEST_ONLY: bool = true;
    type Input = NoopSpec;
    type Step = NoopStep;
    type Response = NoopResponse;
    /// The spec makes the steps; NOOP stores no plan.
    type Plan = NoopSpec;

    fn steps(spec: &NoopSpec) -> Vec<StepRecord> {
        spec.steps()
    }

    fn build(_env: &Arc<Env>) -> Self {
        Noop
    }

    fn deadline(&self) -> Duration {
        Duration::from_secs(600)
    }

    fn step(&self, stored: &StepRecord) -> Result<NoopStep, String> {
        NoopStep::deserialize(&stored.input).map_err(|e| e.to_string())
    }

    fn run_step<'a>(
        &'a self,
        _spec: &'a NoopSpec,
        step: &'a NoopStep,
        ctx: &'a StepCtx,
    ) -> BoxFuture<'a, Result<Value, StepError>> {
        Box::pin(async move {
            if step.hang {
                // A long cloud call: only cancellation ends it.
                ctx.cancel.cancelled().await;
                return Err(StepError::terminal(
                    RpcCode::Cancelled,
                    "CANCELLED",
                    "cancelled",
                ));
            }
            if step.millis > 0 {
                tokio::time::sleep(Duration::from_millis(step.millis)).await;
            }
            let fail = step.fail_retryable;
            // `attempts` counts this attempt (1-based, across resumes).
            if ctx.step.attempts <= fail {
                return Err(StepError::retryable(
                    RpcCode::Unavailable,
                    "BACKEND_UNAVAILABLE",
                    format!("injected retryable failure {} of {fail}", ctx.step.attempts),
                ));
            }
            if step.fail_terminal {
                return Err(StepError::terminal(
                    RpcCode::ResourceExhausted,
                    "QUOTA_INSUFFICIENT",
                    "injected terminal failure: quota exceeded",
                )
                .was("QUOTA_EXCEEDED")
                .with("service", "noop")
                .with("method", "noop.step"));
            }
            let previous: u64 = ctx
                .results
                .values()
                .filter_map(|v| v["chain"].as_u64())
                .max()
                .unwrap_or(0);
            Ok(json!({ "chain": previous + 1 }))
        })
    }

    fn commit_step<'a>(
        &'a self,
        conn: &'a mut sqlx::PgConnection,
        steps: &'a Value,
        ctx: &'a StepCtx,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(operations::save_steps_with_noop_effect(
            conn,
            ctx.op.id,
            ctx.op.generation,
            steps,
            &ctx.step.id,
        ))
    }

    fn response(&self, _spec: &NoopSpec, steps: &[StepRecord]) -> Result<NoopResponse, StepError> {
        Ok(NoopResponse { steps: steps.len() })
    }
}
