"""What waiting cannot change: a CRD or a namespace whose objects the last pass could not
free were each refused lastingly (a dead admission webhook, a namespace that is gone).
Reported at once, and not waited on until the deadline."""

from __future__ import annotations

from ..model import STILL_BLOCKING, Action, crd_ref, namespace_ref
from .admission import Admission
from .crd_instances import CrdState
from .freeing import Freer
from .namespace_sweep import NamespaceState
from .object_sweep import ObjectState
from .outcomes import OutcomeBook


def crd_held(admission: Admission, freer: Freer, book: OutcomeBook, state: CrdState) -> bool:
    """Each of its objects the last pass could not free was refused by a dead admission
    webhook, or is in a namespace that is gone (and could not be created again)."""
    resource = state.crd.resource
    orphans = sum(1 for ref in freer.orphans if ref.resource == resource)
    refused = admission.refused_all(resource, state.blocked - orphans)
    if not refused and not (orphans and orphans >= state.blocked):
        return False
    done = "deleted" if state.uid else "not deleted"
    if orphans:
        message = f"{done}: {orphans} of its objects are in a namespace that is gone (see above)"
    else:
        message = f"{done}: {state.blocked} of its objects are refused by a dead admission webhook (see above)"
    book.add(crd_ref(state.crd.name), Action.BLOCKING, message=message, aspect=STILL_BLOCKING)
    return True


def object_held(admission: Admission, freer: Freer, state: ObjectState) -> bool:
    """Its update is refused by a dead admission webhook, or its namespace is gone (each
    reported where it was found)."""
    return admission.blocking(state.ref, "UPDATE") is not None or state.ref in freer.orphans


def namespace_held(admission: Admission, book: OutcomeBook, state: NamespaceState) -> bool:
    """Everything left inside was refused by a dead admission webhook in the last pass, or
    objects inside the server cannot read stay (each named already)."""
    if state.unreadable:
        message = "not gone: objects inside cannot be read from storage (see above), and the namespace waits on them"
        book.add(namespace_ref(state.name), Action.BLOCKING, message=message, aspect=STILL_BLOCKING)
        return True
    refused = admission.refused_in[state.name]
    if not state.contents or refused < state.contents:
        return False
    message = f"not gone: the {refused} objects left inside are refused by a dead admission webhook (see above)"
    book.add(namespace_ref(state.name), Action.BLOCKING, message=message, aspect=STILL_BLOCKING)
    return True
