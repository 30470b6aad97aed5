// The TypeScript client generated from kineticd's OpenAPI document (openapi-generator
// `typescript-fetch`), used against a running `kineticd serve --dev`: the day in the life
// of a team. Create the team, `up` a cluster with an L4 GPU pool and wait, list its node
// pools, preview a TPU pool add (`:previewCreate`: a plan, nothing queued), add it and wait,
// then `down` the cluster and wait. Every answer is a generated type; every field that
// matters is checked.
//
// Run by tests/openapi_client_ts.rs, which generates the client into ./client, compiles
// this file and the client with the pinned tsc (strict), and starts the server:
//
//     node out/run.js http://127.0.0.1:PORT
//
// Exits non-zero on the first surprise. Only the generated APIs and models talk to the
// server.

import { strict as assert } from "node:assert";

import {
  ClustersApi,
  Configuration,
  ErrorBodyFromJSON,
  NodePool,
  NodePoolsApi,
  Operation,
  OperationState,
  OperationType,
  OperationsApi,
  Plan,
  ResponseError,
  Team,
  TeamsApi,
} from "./client";

const USER = "openapi-client-ts@example.com"; // dev-mode identity, sent as X-Kinetic-User
const TEAM = "openapi-client-ts";
const PROJECT = "openapi-client-ts-gcp";
const ZONE = "us-central1-a";
const CLUSTER = "typed-ts";
const GPU = "gpu-l4";
const TPU = "tpu-v5litepod-16";
// How long one operation may take at most; the server's long-poll answers once it is done.
const DEADLINE_MS = 300_000;

const where = { project: PROJECT, zone: ZONE, cluster: CLUSTER };
const clusterName = `projects/${PROJECT}/zones/${ZONE}/clusters/${CLUSTER}`;

async function waitDone(operations: OperationsApi, started: Operation): Promise<Operation> {
  const id = started.name.replace(/^operations\//, "");
  const deadline = Date.now() + DEADLINE_MS;
  let op = started;
  while (!op.done) {
    assert.ok(Date.now() < deadline, `${op.name} not done in time: ${op.metadata.state}`);
    op = await operations.waitOperation({ operation: id, timeout: "20s" });
  }
  assert.equal(
    op.metadata.state,
    OperationState.Succeeded,
    `${op.name}: ${op.metadata.state} ${JSON.stringify(op.error)}`,
  );
  assert.ok(op.error == null, `${op.name} failed: ${JSON.stringify(op.error)}`);
  assert.equal(op.metadata.progress.percent, 100, `${op.name} progress`);
  assert.equal(op.metadata.progress.stepsDone, op.metadata.progress.stepsTotal);
  console.log(`done: ${op.name} ${op.metadata.type} ${op.metadata.state}`);
  return op;
}

function checkStarted(op: Operation, type: OperationType, target: string): void {
  assert.match(op.name, /^operations\/.+/);
  assert.equal(op.done, false, `${op.name} done at once`);
  assert.equal(op.metadata.type, type);
  assert.equal(op.metadata.target, target);
  assert.equal(op.metadata.team, `teams/${TEAM}`);
  assert.equal(op.metadata.createdBy, USER);
  console.log(`${type}: ${op.name} ${op.metadata.state}`);
}

async function main(api: string): Promise<void> {
  const config = new Configuration({ basePath: api, headers: { "X-Kinetic-User": USER } });
  const teams = new TeamsApi(config);
  const clusters = new ClustersApi(config);
  const pools = new NodePoolsApi(config);
  const operations = new OperationsApi(config);

  // 1. The team.
  const team: Team = await teams.createTeam({
    createTeamRequest: { teamId: TEAM, projects: [PROJECT] },
  });
  assert.equal(team.name, `teams/${TEAM}`);
  assert.equal(team.teamId, TEAM);
  assert.deepEqual(team.projects, [PROJECT]);
  assert.ok(team.etag.length > 0, "team etag");
  console.log(`team: ${team.name} ${team.projects.join(",")}`);

  // Nothing there yet: a typed Google error.
  try {
    await clusters.getCluster(where);
    assert.fail("a cluster exists before up");
  } catch (e) {
    if (!(e instanceof ResponseError)) throw e;
    assert.equal(e.response.status, 404);
    const body = ErrorBodyFromJSON(await e.response.json());
    assert.equal(body.error.status, "NOT_FOUND");
    assert.equal(body.error.details[0].domain, "kineticd");
    console.log(`before up: ${body.error.details[0].reason}`);
  }

  // 2. up, and wait.
  const up = await clusters.applyCluster({ ...where, upRequest: { accelerator: GPU } });
  checkStarted(up, OperationType.UpCluster, clusterName);
  await waitDone(operations, up);
  const cluster = await clusters.getCluster(where);
  assert.equal(cluster.name, clusterName);
  assert.equal(cluster.state, "RUNNING");
  assert.equal(cluster.createdBy, USER);

  // 3. Its node pools: the L4 pool `up` made.
  const listed = await pools.listNodePools(where);
  assert.equal(listed.nodePools.length, 1, JSON.stringify(listed.nodePools));
  const gpu: NodePool = listed.nodePools[0];
  assert.equal(gpu.accelerator, GPU);
  assert.equal(gpu.kind, "GPU");
  assert.equal(gpu.state, "RUNNING");
  assert.equal(gpu.name, `${clusterName}/nodePools/${gpu.poolId}`);
  assert.ok(listed.nextPageToken == null, "one page");
  console.log(`pools: ${gpu.poolId} ${gpu.kind} ${gpu.accelerator} ${gpu.state}`);

  // 4. Preview a TPU pool add (`:previewCreate`): a plan that creates one node pool, and
  // nothing queued.
  const plan: Plan = await pools.previewCreateNodePool({
    ...where,
    addPoolRequest: { accelerator: TPU },
  });
  const creates = plan.actions.filter(
    (a) => a.action === "CREATE" && a.type === "container.nodePool",
  );
  assert.equal(creates.length, 1, JSON.stringify(plan.actions));
  assert.ok(plan.estimatedHourlyCost != null, "the plan prices the pool");
  assert.equal(plan.estimatedHourlyCost.currency, "USD");
  const still = await pools.listNodePools(where);
  assert.deepEqual(
    still.nodePools.map((p) => p.poolId),
    [gpu.poolId],
    "a preview adds no pool",
  );
  // The `up`; its SYNC_ACCESS follows it on its own queue. No other.
  const queued = await operations.listOperations({ filter: `target="${clusterName}"` });
  const changes = queued.operations.filter((o) => o.metadata.type !== "SYNC_ACCESS");
  assert.equal(changes.length, 1, "a preview queues no operation");
  console.log(`preview: ${plan.actions.length} actions, creates ${creates[0].name}`);

  // 5. Add the TPU pool, and wait.
  const add = await pools.createNodePool({ ...where, addPoolRequest: { accelerator: TPU } });
  const target = add.metadata.target;
  assert.ok(target.startsWith(`${clusterName}/nodePools/`), target);
  checkStarted(add, OperationType.AddNodePool, target);
  await waitDone(operations, add);
  const poolId = target.split("/").pop() as string;
  const tpu = await pools.getNodePool({ ...where, pool: poolId });
  assert.equal(tpu.accelerator, TPU);
  assert.equal(tpu.kind, "TPU");
  assert.equal(tpu.state, "RUNNING");
  assert.equal(tpu.tpuTopology, "4x4");
  const both = await pools.listNodePools(where);
  assert.deepEqual(both.nodePools.map((p) => p.poolId).sort(), [gpu.poolId, poolId].sort());
  console.log(`pool add: ${tpu.poolId} ${tpu.kind} ${tpu.accelerator} ${tpu.tpuTopology}`);

  // 6. down, and wait: the record stays, DELETED.
  const down = await clusters.deleteCluster(where);
  checkStarted(down, OperationType.DownCluster, clusterName);
  await waitDone(operations, down);
  const gone = await clusters.getCluster(where);
  assert.equal(gone.state, "DELETED");
  console.log(`after down: ${gone.name} ${gone.state}`);
  console.log("typed client: ok");
}

const api = process.argv[2];
if (!api) {
  console.error("usage: node out/run.js API_URL");
  process.exit(2);
}
main(api).catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
