"""An S3-compatible server (moto's) on loopback for the remote-file tests, and clients of it
through pyarrow.fs.S3FileSystem and fsspec (s3fs). Import the fixtures ``endpoint`` (the
server, one per test module: "host:port"), ``bucket`` (a new empty bucket) and ``aws_env``
(the AWS environment variables pointing at the server)."""

import itertools

import moto.server as moto_server
import pyarrow.fs as pafs
import pytest
import s3fs

KEY, SECRET = "testing", "testing"
_buckets = itertools.count()


@pytest.fixture(scope="module")
def endpoint():
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"{host}:{port}"
    server.stop()


@pytest.fixture
def bucket(endpoint):
    """A new empty bucket."""
    name = f"bucket{next(_buckets)}"
    arrow_fs(endpoint).create_dir(name)
    return name


@pytest.fixture
def aws_env(endpoint, monkeypatch):
    """The standard AWS environment variables set to the server (URIs resolve to it)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{endpoint}")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def arrow_fs(endpoint, key=KEY, retries=None):
    """pyarrow's S3 client of the server (``retries``: its attempts, else its default)."""
    kwargs = {}
    if retries is not None:
        kwargs["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(max_attempts=retries)
    return pafs.S3FileSystem(
        access_key=key,
        secret_key=SECRET,
        endpoint_override=endpoint,
        scheme="http",
        region="us-east-1",
        allow_bucket_creation=True,
        **kwargs,
    )


def fsspec_fs(endpoint, retries=None):
    """s3fs's client of the server (``retries``: its and botocore's attempts, else theirs)."""
    kwargs = {}
    if retries is not None:
        kwargs = {"config_kwargs": {"retries": {"total_max_attempts": retries}}}
    fs = s3fs.S3FileSystem(
        key=KEY,
        secret=SECRET,
        client_kwargs={"endpoint_url": f"http://{endpoint}", "region_name": "us-east-1"},
        skip_instance_cache=True,
        **kwargs,
    )
    if retries is not None:
        fs.retries = retries  # s3fs's own loop (a class attribute)
    return fs
