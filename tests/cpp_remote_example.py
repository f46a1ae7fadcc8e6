"""Runs examples/arrow_remote_example.cc (the program's path: argv[1]) against an S3-compatible
server (moto's) that it starts on loopback and stops: ctest's arrow_remote_example test
(CMakeLists.txt, in `make test`). Checks that a C++ program linking libspelt_arrow writes an
ArrayRecord file into the bucket (not into a local folder named "s3:"), that another process
reads it back whole (every record, checked against a hash computed here), that a missing
object fails naming its URI, and that an explicit ArrowFileSystem made of a URI with the
endpoint in its query reads it with no endpoint in the environment. Exits nonzero on a
failure."""

import logging
import os
import subprocess
import sys
import tempfile

import boto3
import moto.server

KEY, SECRET, REGION, BUCKET = "testing", "testing", "us-east-1", "spelt"


def record(i: int) -> bytes:
    """Record i as the example writes it."""
    return f"record {i} ".encode() * (1 + i % 50)


def summary(n: int) -> str:
    """The example's line for records 0..n-1 (FNV-1a of each length and record)."""
    h, total = 0xCBF29CE484222325, 0
    for i in range(n):
        r = record(i)
        total += len(r)
        for b in len(r).to_bytes(8, "little") + r:
            h = ((h ^ b) * 0x100000001B3) % 2**64
    return f"records={n} bytes={total} fnv1a={h:016x}\n"


def check(ok: bool, what: str, result: subprocess.CompletedProcess | None = None) -> None:
    if not ok:
        detail = (
            f"\nexit status {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
            if result
            else ""
        )
        sys.exit(f"FAILED: {what}{detail}")


def main() -> None:
    example = os.path.abspath(sys.argv[1])
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the server's line per request
    server = moto.server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        # Arrow's standard configuration: credentials, region and endpoint from the environment.
        env = {
            **os.environ,
            "AWS_ACCESS_KEY_ID": KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_EC2_METADATA_DISABLED": "true",
        }
        s3 = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name=REGION,
            aws_access_key_id=KEY,
            aws_secret_access_key=SECRET,
        )
        s3.create_bucket(Bucket=BUCKET)
        uri, n = f"s3://{BUCKET}/train.array_record", 300
        with tempfile.TemporaryDirectory() as cwd:

            def run(*args: str) -> subprocess.CompletedProcess:
                return subprocess.run(
                    [example, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
                )

            wrote = run("--write", str(n), uri)
            check(wrote.returncode == 0 and wrote.stdout == summary(n), "write and read", wrote)
            check(os.listdir(cwd) == [], f"a local file was written: {os.listdir(cwd)}")
            size = s3.head_object(Bucket=BUCKET, Key="train.array_record")["ContentLength"]
            check(size > 0, "the object is in the bucket")

            read = run(uri)  # another process, reading what the first wrote
            check(read.returncode == 0 and read.stdout == summary(n), "read back", read)

            missing = run(f"s3://{BUCKET}/missing.array_record")
            check(
                missing.returncode == 1 and f"s3://{BUCKET}/missing.array_record" in missing.stderr,
                "a missing object fails naming its URI",
                missing,
            )

            # The endpoint in the URI of an explicit filesystem, none in the environment.
            env.pop("AWS_ENDPOINT_URL")
            explicit = run(
                "--filesystem",
                f"s3://?endpoint_override={host}:{port}&scheme=http&region={REGION}",
                uri,
            )
            check(
                explicit.returncode == 0 and explicit.stdout == summary(n),
                "read through ArrowFileSystem(URI with the endpoint)",
                explicit,
            )
        print(f"ok: {n} records through {uri} ({size} bytes) at {endpoint}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
