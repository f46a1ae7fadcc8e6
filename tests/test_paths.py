"""Paths and URIs given to the readers and writers (spelt._paths, spelt._file_system): file://
URIs are local files; a scheme that no installed library opens is refused naming the URI.
Object stores themselves: tests/test_remote_files.py."""

import numpy as np
import pytest
import spelt as grain
from spelt import array_record, cli, tfrecord

UNKNOWN = ["nosuch://bucket/train", "nosuch://bucket/train@2", "nosuch://c/train-*"]


@pytest.mark.parametrize("uri", UNKNOWN)
@pytest.mark.parametrize(
    "open_path",
    [
        grain.sources.ArrayRecordDataSource,
        array_record.ArrayRecordWriter,
        array_record.info,
        tfrecord.TFRecordDataSource,
        tfrecord.TFRecordIterDataset,
        tfrecord.TFRecordWriter,
        tfrecord.detect_compression,
    ],
)
def test_unknown_scheme_is_refused_naming_it(tmp_path, monkeypatch, uri, open_path):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="no installed library handles nosuch:// URIs") as e:
        open_path(uri)
    assert repr(uri) in str(e.value)
    assert not list(tmp_path.iterdir())  # no local folder named "nosuch:"


def test_mixed_filesystems_are_refused(tmp_path):
    with pytest.raises(ValueError, match="mix local paths and memory://"):
        grain.sources.ArrayRecordDataSource([str(tmp_path / "a"), "memory://b/c"])


def test_a_filesystem_must_be_arrow_or_fsspec():
    with pytest.raises(TypeError, match="pyarrow.fs.FileSystem or an fsspec filesystem"):
        array_record.ArrayRecordWriter("x", filesystem=object())


def test_file_uri_reads_and_writes_local_files(tmp_path):
    path = tmp_path / "a b.array_record"
    with array_record.ArrayRecordWriter(f"file://{tmp_path}/a%20b.array_record") as w:
        w.write(b"x")
        w.write(b"yz")
    assert path.exists()
    ds = grain.sources.ArrayRecordDataSource(f"file://localhost{path}")
    assert [ds[0], ds[1]] == [b"x", b"yz"]


def test_file_uri_of_another_host_is_refused():
    with pytest.raises(ValueError, match="names host 'elsewhere'"):
        grain.sources.ArrayRecordDataSource("file://elsewhere/data/x.array_record")


def test_convert_to_an_unknown_scheme_fails_and_writes_nothing_local(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    np.savez(tmp_path / "data.npz", x=np.arange(10))
    code = cli.main(["convert", "data.npz", "-o", "nosuch://bucket/x", "--num-shards", "2"])
    assert code == 1
    assert "nosuch://bucket/x" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.npz"]


def test_inspect_of_an_unknown_scheme_fails_naming_it(capsys):
    assert cli.main(["inspect", "nosuch://bucket/train@4"]) == 1
    assert "nosuch://bucket/train@4" in capsys.readouterr().err
