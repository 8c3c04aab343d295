"""The reference pages are generated from the code and must be up to date."""
from minikafka import docgen


def test_reference_pages_are_up_to_date():
    assert docgen.main(["--check"]) == 0, "run: python -m minikafka.docgen"


def test_every_api_and_error_is_documented():
    from minikafka.errors import REGISTRY
    from minikafka.protocol.rpc.messages import APIS
    text = docgen.PAGES["protocol.md"]()
    for name in APIS:
        assert f"### {name}" in text
    for e in REGISTRY:
        assert f"`{e.name}`" in text
