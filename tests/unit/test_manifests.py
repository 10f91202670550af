import io

import pytest

from kubectl_unfinalize.errors import InputError
from kubectl_unfinalize.resolve.manifests import parse_text, read_manifests

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
"""
WIDGET = """
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: ns1}
"""


def test_multi_document_and_empty_documents():
    docs = parse_text(f"---\n{CRD}\n---\n---\n{WIDGET}", "x.yaml")
    assert [d.body["kind"] for d in docs] == ["CustomResourceDefinition", "Widget"]
    assert docs[1].index == 2


def test_list_is_flattened():
    text = (
        '{"apiVersion": "v1", "kind": "List", "items": ['
        '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},'
        '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}]}'
    )
    assert [d.body["metadata"]["name"] for d in parse_text(text, "l.json")] == ["a", "b"]


def test_malformed_yaml_names_file_and_line():
    with pytest.raises(InputError, match=r"^bad\.yaml:2: invalid YAML: mapping values are not allowed"):
        parse_text("apiVersion: v1\nkind: ConfigMap: x\nmetadata: {name: a}\n", "bad.yaml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: ConfigMap\nmetadata: {name: a}", "missing apiVersion"),
        ("apiVersion: v1\nkind: ConfigMap", "has no metadata.name"),
        ("- a\n- b", "expected a mapping"),
    ],
)
def test_incomplete_documents(text, message):
    with pytest.raises(InputError, match=message):
        parse_text(text, "f.yaml")


def test_directories_recursion_and_stdin(tmp_path):
    (tmp_path / "a.yaml").write_text(CRD)
    (tmp_path / "notes.txt").write_text("not a manifest")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yml").write_text(WIDGET)
    assert len(read_manifests([str(tmp_path)])) == 1
    assert len(read_manifests([str(tmp_path)], recursive=True)) == 2
    assert len(read_manifests(["-"], stdin=io.StringIO(WIDGET))) == 1


def test_missing_path_and_empty_directory(tmp_path):
    with pytest.raises(InputError, match="no such file or directory"):
        read_manifests([str(tmp_path / "nope.yaml")])
    with pytest.raises(InputError, match=r"no manifests found .*use -R"):
        read_manifests([str(tmp_path)])
