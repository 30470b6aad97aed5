"""The typed Python client generated from kineticd's OpenAPI document, used against a
running `kineticd serve --dev`: create a team, `up` a cluster with an L4 GPU pool, wait
for the operation, read the cluster and its node pools, and check every value.

Run by tests/openapi_client.rs, which generates the client (openapi-python-client) into a
temporary folder on PYTHONPATH and starts the server:

    python run.py http://127.0.0.1:PORT

Exits non-zero (an AssertionError or an exception) on the first surprise. Only the
generated package's typed methods and models talk to the server.
"""

import sys
import time

import httpx
from kineticd_client import Client
from kineticd_client.api.clusters import apply_cluster, get_cluster
from kineticd_client.api.node_pools import get_node_pool, list_node_pools
from kineticd_client.api.operations import wait_operation
from kineticd_client.api.teams import create_team
from kineticd_client.models import (
    Cluster,
    CreateTeamRequest,
    ErrorBody,
    ListNodePoolsResponse,
    NodePool,
    Operation,
    Team,
    UpRequest,
)
from kineticd_client.types import Unset

USER = "openapi-client@example.com"  # dev-mode identity, sent as X-Kinetic-User
TEAM = "openapi-client"
PROJECT = "openapi-client-gcp"
ZONE = "us-central1-a"
CLUSTER = "typed"
ACCELERATOR = "gpu-l4"
# How long `up` may take at most; the server's long-poll returns as soon as it is done.
DEADLINE_S = 300


def expect(response, status, model):
    """The parsed body of a response that must have this status and model."""
    assert response.status_code == status, (
        f"expected HTTP {status}, got {response.status_code}: {response.content!r}"
    )
    assert isinstance(response.parsed, model), (
        f"expected a {model.__name__}, got {type(response.parsed).__name__}"
    )
    return response.parsed


def unset_or_none(value):
    return value is None or isinstance(value, Unset)


def main(api):
    client = Client(
        base_url=api,
        headers={"X-Kinetic-User": USER},
        timeout=httpx.Timeout(60.0),
        raise_on_unexpected_status=True,
    )

    team = expect(
        create_team.sync_detailed(
            client=client,
            body=CreateTeamRequest(team_id=TEAM, projects=[PROJECT]),
        ),
        201,
        Team,
    )
    assert team.name == f"teams/{TEAM}", team.name
    assert team.team_id == TEAM, team.team_id
    assert team.projects == [PROJECT], team.projects
    print(f"team: {team.name} {team.projects}")

    # Nothing there yet: a typed Google error.
    missing = expect(
        get_cluster.sync_detailed(PROJECT, ZONE, CLUSTER, client=client), 404, ErrorBody
    )
    assert missing.error.status == "NOT_FOUND", missing.error.status
    assert missing.error.details[0].domain == "kineticd", missing.error.details[0]
    print(f"before up: {missing.error.details[0].reason}")

    op = expect(
        apply_cluster.sync_detailed(
            PROJECT, ZONE, CLUSTER, client=client, body=UpRequest(accelerator=ACCELERATOR)
        ),
        202,
        Operation,
    )
    assert op.name.startswith("operations/"), op.name
    assert op.metadata.type_ == "UP_CLUSTER", op.metadata.type_
    assert op.metadata.target.endswith(f"/clusters/{CLUSTER}"), op.metadata.target
    print(f"up: {op.name} {op.metadata.state}")

    op_id = op.name.removeprefix("operations/")
    started = time.monotonic()
    while not op.done:
        assert time.monotonic() - started < DEADLINE_S, (
            f"{op.name} not done after {DEADLINE_S} s: {op.metadata.state}"
        )
        op = expect(
            wait_operation.sync_detailed(op_id, client=client, timeout="20s"), 200, Operation
        )
    assert op.metadata.state == "SUCCEEDED", (op.metadata.state, op.error)
    assert unset_or_none(op.error), op.error
    print(f"done: {op.name} {op.metadata.state}")

    cluster = expect(get_cluster.sync_detailed(PROJECT, ZONE, CLUSTER, client=client), 200, Cluster)
    assert cluster.name == f"projects/{PROJECT}/zones/{ZONE}/clusters/{CLUSTER}", cluster.name
    assert cluster.cluster_id, cluster.cluster_id  # kineticd's record id
    assert cluster.project == PROJECT, cluster.project
    assert cluster.zone == ZONE, cluster.zone
    assert cluster.team == f"teams/{TEAM}", cluster.team
    assert cluster.created_by == USER, cluster.created_by
    assert cluster.state == "RUNNING", cluster.state
    assert len(cluster.node_pools) == 1, [p.pool_id for p in cluster.node_pools]
    pool = cluster.node_pools[0]
    assert pool.accelerator == ACCELERATOR, pool.accelerator
    assert pool.kind == "GPU", pool.kind
    assert pool.state == "RUNNING", pool.state
    assert pool.name == f"{cluster.name}/nodePools/{pool.pool_id}", pool.name
    print(
        f"cluster: {cluster.name} {cluster.state} pools={[p.pool_id for p in cluster.node_pools]}"
    )

    pools = expect(
        list_node_pools.sync_detailed(PROJECT, ZONE, CLUSTER, client=client),
        200,
        ListNodePoolsResponse,
    )
    assert [p.to_dict() for p in pools.node_pools] == [pool.to_dict()], pools.node_pools
    assert unset_or_none(pools.next_page_token), pools.next_page_token

    one = expect(
        get_node_pool.sync_detailed(PROJECT, ZONE, CLUSTER, pool.pool_id, client=client),
        200,
        NodePool,
    )
    assert one.to_dict() == pool.to_dict(), (one, pool)
    print(f"node pool: {one.pool_id} {one.kind} {one.accelerator} {one.state}")
    print("typed client: ok")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: run.py API_URL")
    main(sys.argv[1])
