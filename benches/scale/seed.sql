-- The scale benchmark's bulk data, set-based, on top of the baseline (team `bench`:
-- 4 projects x 50 clusters x 3 pools, 1,000 queued NOOP operations, made through the
-- store). JSON columns are copied from the baseline's rows (written by the real code),
-- so every seeded row renders. {TEAMS}, {CLUSTERS}, {POOLS}, {OPS}, {WIDE_TEAMS},
-- {BENCH_MEMBERS}, {PROFILES}, {WIDE_POOLS} are replaced before it runs; the totals
-- include the baseline.

-- Teams: team-0001 .. with 4 projects each, 5 members each; wide@ is a VIEWER in the
-- first {WIDE_TEAMS} teams (bench among them), small@ in three small teams (about 0.2%
-- of the rows each); bench gains {BENCH_MEMBERS} members.
INSERT INTO teams (team_id, display_name)
SELECT format('team-%s', lpad(g::text, 4, '0')), format('Team %s', g)
FROM generate_series(1, {TEAMS} - 1) g;

INSERT INTO team_projects (project_id, team_id)
SELECT format('proj-%s-%s', lpad(g::text, 4, '0'), k), format('team-%s', lpad(g::text, 4, '0'))
FROM generate_series(1, {TEAMS} - 1) g, generate_series(0, 3) k;
INSERT INTO team_projects (project_id, team_id)
SELECT format('bench-proj-x%s', k), 'bench' FROM generate_series(0, 3) k;

INSERT INTO team_members (team_id, email, role)
SELECT t.team_id, format('user%s@example.com', (g * 7 + k * 131) % 997),
       (ARRAY['OWNER', 'ADMIN', 'MEMBER', 'VIEWER', 'VIEWER'])[k + 1]
FROM generate_series(1, {TEAMS} - 1) g
CROSS JOIN LATERAL (SELECT format('team-%s', lpad(g::text, 4, '0')) AS team_id) t
CROSS JOIN generate_series(0, 4) k
ON CONFLICT DO NOTHING;
INSERT INTO team_members (team_id, email, role)
SELECT team_id, 'wide@example.com', 'VIEWER'
FROM (SELECT team_id FROM teams ORDER BY team_id LIMIT {WIDE_TEAMS}) t
ON CONFLICT DO NOTHING;
INSERT INTO team_members (team_id, email, role)
SELECT team_id, 'small@example.com', 'VIEWER'
FROM teams WHERE team_id IN ('team-0100', 'team-0200', 'team-0300');
INSERT INTO team_members (team_id, email, role)
SELECT 'bench', format('member%s@example.com', lpad(g::text, 5, '0')), 'VIEWER'
FROM generate_series(1, {BENCH_MEMBERS}) g;

-- Clusters. History: an earlier, DELETED incarnation of every fifth baseline cluster.
-- Bench's other clusters (a fifth of the total) in bench-proj-x0..3; the rest spread
-- over the other teams. About 1 in 7 is DELETED, 1 in 50 ERROR.
CREATE TEMP TABLE tpl_cluster AS SELECT spec, created_by FROM clusters LIMIT 1;
CREATE TEMP TABLE tpl_pool AS SELECT spec FROM node_pools LIMIT 1;
CREATE TEMP TABLE tpl_op AS SELECT input, steps FROM operations LIMIT 1;

INSERT INTO clusters (id, project_id, zone, name, team_id, state, settled_state, spec,
                      resources, created_by, create_time, update_time, delete_time)
SELECT gen_random_uuid(), c.project_id, c.zone, c.name, c.team_id, 'DELETED', 'DELETED',
       c.spec, c.resources, c.created_by, c.create_time - interval '30 days',
       c.create_time - interval '29 days', c.create_time - interval '29 days'
FROM clusters c WHERE right(c.name, 1) IN ('0', '5');

INSERT INTO clusters (id, project_id, zone, name, team_id, state, settled_state, spec,
                      resources, created_by, create_time, update_time, delete_time)
SELECT gen_random_uuid(), p, z, n, team, st, CASE WHEN st = 'RUNNING' THEN 'RUNNING' ELSE st END,
       tpl.spec, jsonb_build_object('gkeCluster', format('projects/%s/locations/%s/clusters/%s', p, z, n)),
       tpl.created_by, now() - make_interval(secs => g * 97), now() - make_interval(secs => g * 13),
       CASE WHEN st = 'DELETED' THEN now() - make_interval(secs => g * 13) END
FROM (SELECT count(*)::int AS have_n FROM clusters) have, tpl_cluster tpl,
     generate_series(0, {CLUSTERS} - 1) g
CROSS JOIN LATERAL (SELECT g < {CLUSTERS} / 5 AS mine) b
CROSS JOIN LATERAL (SELECT
    CASE WHEN b.mine THEN 'bench' ELSE format('team-%s', lpad((1 + g % ({TEAMS} - 1))::text, 4, '0')) END AS team,
    CASE WHEN b.mine THEN format('bench-proj-x%s', g % 4)
         ELSE format('proj-%s-%s', lpad((1 + g % ({TEAMS} - 1))::text, 4, '0'), (g / ({TEAMS} - 1)) % 4) END AS p,
    (ARRAY['us-central1-a', 'us-central1-b', 'europe-west4-a'])[1 + g % 3] AS z,
    format('c-%s', lpad(g::text, 5, '0')) AS n,
    CASE WHEN g = 0 THEN 'RUNNING' WHEN g % 7 = 3 THEN 'DELETED' WHEN g % 50 = 1 THEN 'ERROR'
         ELSE 'RUNNING' END AS st) v
WHERE g < {CLUSTERS} - have.have_n;

-- Node pools: {WIDE_POOLS} on the wide cluster (bench-proj-x0, c-00000), the rest over
-- the live seeded clusters, about evenly.
INSERT INTO node_pools (cluster_id, pool_id, state, settled_state, spec)
SELECT c.id, format('pool-%s', lpad(k::text, 4, '0')), 'RUNNING', 'RUNNING',
       jsonb_set(tpl.spec, '{poolId}', to_jsonb(format('pool-%s', lpad(k::text, 4, '0'))))
FROM clusters c, tpl_pool tpl, generate_series(0, {WIDE_POOLS} - 1) k
WHERE c.project_id = 'bench-proj-x0' AND c.name = 'c-00000';

WITH live AS (
    SELECT id, row_number() OVER (ORDER BY id) AS r FROM clusters c
    WHERE state <> 'DELETED' AND NOT EXISTS (SELECT 1 FROM node_pools p WHERE p.cluster_id = c.id)),
need AS (SELECT {POOLS} - (SELECT count(*) FROM node_pools) AS n, (SELECT count(*) FROM live) AS c)
INSERT INTO node_pools (cluster_id, pool_id, state, settled_state, spec)
SELECT live.id, format('pool-%s', lpad(k::text, 4, '0')),
       CASE WHEN k = 0 AND live.r % 40 = 0 THEN 'ERROR' ELSE 'RUNNING' END,
       CASE WHEN k = 0 AND live.r % 40 = 0 THEN 'ERROR' ELSE 'RUNNING' END,
       jsonb_set(tpl.spec, '{poolId}', to_jsonb(format('pool-%s', lpad(k::text, 4, '0'))))
FROM need, tpl_pool tpl, live
CROSS JOIN LATERAL generate_series(0, (need.n / greatest(need.c, 1))::int) k
WHERE (k * need.c + live.r) <= need.n;

-- Operations: the newest 20 unfinished (5 RUNNING under a live lease on 5 serial keys,
-- 15 newer ones QUEUED behind them on the same keys, so none of the 20 is claimable), every other one finished over
-- the last 25 days: SUCCEEDED, 1 in 20 FAILED, 1 in 50 CANCELLED. A tenth are bench's.
INSERT INTO operations (id, op_type, target, serial_key, team_id, created_by, state,
                        attempt, input, steps, error, lease_owner, lease_expire_time,
                        generation, create_time, start_time, update_time, end_time)
SELECT gen_random_uuid(), v.op_type, v.target, v.target, v.team, v.created_by, v.st,
       CASE WHEN v.st = 'QUEUED' THEN 0 ELSE 1 END, tpl.input,
       CASE WHEN v.st = 'SUCCEEDED' THEN replace(tpl.steps::text, '"PENDING"', '"DONE"')::json
            ELSE tpl.steps END,
       CASE WHEN v.st = 'FAILED' THEN '{"code": 13, "message": "a step failed", "status": "INTERNAL"}'::jsonb END,
       CASE WHEN v.st = 'RUNNING' THEN 'worker-elsewhere' END,
       CASE WHEN v.st = 'RUNNING' THEN now() + interval '1 hour' END,
       CASE WHEN v.st = 'QUEUED' THEN 0 ELSE 1 END,
       v.created, CASE WHEN v.st <> 'QUEUED' THEN v.created + interval '1 second' END,
       v.created + make_interval(secs => 2 + g % 900),
       CASE WHEN v.st IN ('RUNNING', 'QUEUED') THEN NULL ELSE v.created + make_interval(secs => 2 + g % 900) END
FROM tpl_op tpl, generate_series(1, {OPS} - (SELECT count(*) FROM operations)) g
CROSS JOIN LATERAL (SELECT g % 10 = 0 AS mine, 1 + g % ({TEAMS} - 1) AS t) b
CROSS JOIN LATERAL (SELECT
    CASE WHEN b.mine THEN 'bench' ELSE format('team-%s', lpad(b.t::text, 4, '0')) END AS team,
    CASE WHEN g <= 20 THEN format('projects/proj-0001-0/zones/us-central1-a/clusters/busy-%s', g % 5)
         ELSE format('projects/%s/zones/us-central1-a/clusters/c-%s',
                     CASE WHEN b.mine THEN format('bench-proj-%s', g % 4)
                          ELSE format('proj-%s-%s', lpad(b.t::text, 4, '0'), g % 4) END,
                     lpad((g % 60)::text, 3, '0')) END AS target,
    (ARRAY['UPDATE_NODE_POOL', 'UPDATE_NODE_POOL', 'UPDATE_NODE_POOL', 'UPDATE_NODE_POOL',
           'ADD_NODE_POOL', 'ADD_NODE_POOL', 'REMOVE_NODE_POOL', 'UP_CLUSTER',
           'DOWN_CLUSTER', 'FAILOVER_DRILL'])[1 + (g / 10) % 10] AS op_type,
    format('user%s@example.com', g % 997) AS created_by,
    CASE WHEN g <= 15 THEN 'QUEUED' WHEN g <= 20 THEN 'RUNNING' WHEN g % 20 = 0 THEN 'FAILED'
         WHEN g % 50 = 1 THEN 'CANCELLED' ELSE 'SUCCEEDED' END AS st,
    now() - interval '1 hour' - interval '25 days' * (g::float8 / {OPS}) AS created) v;

-- Profiles: {PROFILES} for reader@ (one active), one each for 997 other people.
INSERT INTO profiles (owner_email, profile_id, cluster, namespace, active)
SELECT 'reader@example.com', format('prof-%s', lpad(g::text, 4, '0')),
       format('projects/bench-proj-%s/zones/us-central1-a/clusters/c-%s', g % 4, lpad((g % 50)::text, 3, '0')),
       'default', g = 1
FROM generate_series(1, {PROFILES}) g;
INSERT INTO profiles (owner_email, profile_id, cluster, namespace, active)
SELECT format('user%s@example.com', g), 'default',
       'projects/proj-0001-0/zones/us-central1-a/clusters/c-00001', 'default', true
FROM generate_series(0, 996) g;
