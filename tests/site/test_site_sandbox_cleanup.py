"""The periodic sandbox_cleanup job removes containers a killed worker left behind, and only
those past their deadline."""
import io
import tarfile
import time

import pytest

from leaderboard.tasks import sandbox_cleanup
from sandbox.box import LABEL
from sandbox.docker_backend import DEADLINE_LABEL


@pytest.fixture
def engine(require_docker):
    import docker

    client = docker.from_env()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w"):
        pass  # an empty image: containers are only created, never started
    image = client.api.import_image_from_data(buf.getvalue(), repository="kb-cleanup-test", tag="latest")
    assert image
    yield client
    for c in client.containers.list(all=True, filters={"label": "kb-cleanup-test"}):
        c.remove(force=True)


def _container(client, deadline: float):
    return client.containers.create("kb-cleanup-test:latest", command=["/nothing"],
                                    labels={LABEL: "1", DEADLINE_LABEL: str(int(deadline)), "kb-cleanup-test": "1"})


def test_it_removes_stale_containers_and_keeps_running_ones(engine):
    stale = _container(engine, time.time() - 3600)
    live = _container(engine, time.time() + 3600)
    removed = sandbox_cleanup()
    ids = {c.id for c in engine.containers.list(all=True, filters={"label": "kb-cleanup-test"})}
    assert stale.id not in ids
    assert stale.id[:12] in removed["containers"]
    assert live.id in ids
