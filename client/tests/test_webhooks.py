import json
import time

import pytest
from collab_client import WebhookVerificationError, webhooks

BODY = json.dumps({"id": 5, "type": "issue.created", "data": {"issue": {"id": 9}}}).encode()


def test_both_schemes_verify_and_give_the_typed_event():
    headers = webhooks.sign(BODY, "s3cret", message_id="d-1")
    event = webhooks.verify(BODY, headers, "s3cret")
    assert (event.id, event.type, event.data) == (5, "issue.created", {"issue": {"id": 9}})
    hex_only = {"X-Collab-Signature-256": headers["X-Collab-Signature-256"]}
    assert webhooks.verify(BODY, hex_only, "s3cret").id == 5
    standard_only = {k: v for k, v in headers.items() if k.startswith("webhook-")}
    assert webhooks.verify(BODY, standard_only, "s3cret").id == 5


def test_header_names_are_case_insensitive_and_several_signatures_allowed():
    headers = webhooks.sign(BODY, "new", message_id="d-2")
    lowered = {k.lower(): v for k, v in headers.items() if k.startswith("webhook-")}
    lowered["webhook-signature"] = "v1,bm90LWl0 " + lowered["webhook-signature"]
    assert webhooks.verify(BODY, lowered, "new").id == 5


def test_rotation_accepts_any_of_the_secrets():
    headers = webhooks.sign(BODY, "old", message_id="d-3")
    assert webhooks.verify(BODY, headers, ["new", "old"]).id == 5
    with pytest.raises(WebhookVerificationError):
        webhooks.verify(BODY, headers, ["new"])


@pytest.mark.parametrize(
    "tamper",
    [
        lambda body, headers: (body + b" ", headers),
        lambda body, headers: (body, {**headers, "X-Collab-Signature-256": "sha256=00"}),
        lambda body, headers: (body.replace(b"9", b"8"), headers),
    ],
)
def test_a_changed_body_or_signature_fails(tamper):
    headers = webhooks.sign(BODY, "s3cret", message_id="d-4")
    body, headers = tamper(BODY, headers)
    if "sha256=00" in headers.get("X-Collab-Signature-256", ""):
        headers = {"X-Collab-Signature-256": headers["X-Collab-Signature-256"]}
    with pytest.raises(WebhookVerificationError):
        webhooks.verify(body, headers, "s3cret")


def test_an_old_timestamp_fails_even_with_a_good_signature():
    old = int(time.time()) - 301
    headers = webhooks.sign(BODY, "s3cret", message_id="d-5", timestamp=old)
    with pytest.raises(WebhookVerificationError, match="timestamp"):
        webhooks.verify(BODY, headers, "s3cret")
    assert webhooks.verify(BODY, headers, "s3cret", tolerance=600).id == 5
    future = webhooks.sign(BODY, "s3cret", message_id="d-6", timestamp=int(time.time()) + 400)
    with pytest.raises(WebhookVerificationError):
        webhooks.verify(BODY, future, "s3cret")


def test_nothing_to_check_against_fails():
    with pytest.raises(WebhookVerificationError):
        webhooks.verify(BODY, {}, "s3cret")
    with pytest.raises(WebhookVerificationError):
        webhooks.verify(BODY, webhooks.sign(BODY, "s", message_id="x"), "")


def test_the_reference_standard_webhooks_verifier_agrees():
    standardwebhooks = pytest.importorskip("standardwebhooks")
    import base64

    headers = webhooks.sign(BODY, "s3cret", message_id="msg_1")
    verifier = standardwebhooks.Webhook("whsec_" + base64.b64encode(b"s3cret").decode())
    standard = {k: v for k, v in headers.items() if k.startswith("webhook-")}
    assert verifier.verify(BODY, standard)["id"] == 5
