"""A maker receives its declared inputs and nothing else: a maker that would read anything more is
refused when it is declared, and everything it receives is in its file's key. So a file whose key
is unchanged is the file the maker would make again (the incremental build equals the full one by
construction; tests/test_incremental.py holds them equal over random changes)."""
from __future__ import annotations

import dataclasses
from functools import partial

import pytest

from publisher.build import pipeline
from publisher.build.incremental import Keys
from publisher.compute import rewards as R
from publisher.compute.params import rewards_params
from publisher.endpoints.context import Context
from publisher.endpoints.registry import Deferred, Each, resolve


def staker_body(st) -> dict:
    return {"address": st.staker_addr}


def staker_and_price(st, price) -> dict:
    return {"address": st.staker_addr, "price": price}


def address(st) -> dict:
    return {"address": st.staker_addr}


def test_a_maker_asking_for_more_than_it_declares_is_refused(demo_snapshot):
    st = demo_snapshot.stakers[0]
    with pytest.raises(TypeError, match=r"test_makers\.staker_and_price\(st, price\) does not take the 1 input"):
        Deferred((st,), staker_and_price)
    with pytest.raises(TypeError, match=r"staker_body\(st\) does not take the 2 input"):
        Deferred((st, demo_snapshot.oracle), staker_body)
    with pytest.raises(TypeError, match=r"staker_and_price\(st, price\) does not take the 1 input"):
        Each(staker_and_price, (st,))  # a row function takes one item
    Deferred((st, demo_snapshot.oracle.price), staker_and_price)  # declared, it is given


def test_a_maker_that_reaches_past_its_inputs_is_refused(demo_snapshot):
    ctx = Context(demo_snapshot)
    st = demo_snapshot.stakers[0]

    def with_price(st):
        return {"address": st.staker_addr, "price": ctx.snap.oracle.price}

    def nested(st):
        return {"address": st.staker_addr}

    with pytest.raises(TypeError, match=r"with_price is not a module-level function \(it closes over ctx\)"):
        Deferred((st,), with_price)
    with pytest.raises(TypeError, match="nested is not a module-level function"):
        Deferred((st,), nested)
    with pytest.raises(TypeError, match="is not a module-level function"):
        Deferred((st,), lambda st: {"address": st.staker_addr})
    with pytest.raises(TypeError, match="is not a function"):
        Deferred((), partial(staker_body, st))
    with pytest.raises(TypeError, match="closes over ctx"):
        Each(with_price, (st,))
    with pytest.raises(TypeError, match="inputs are a tuple"):
        Deferred([st], staker_body)  # type: ignore[arg-type]


@dataclasses.dataclass
class Mutable:
    value: int


def test_an_input_no_key_can_describe_fails_the_build_loudly(demo_snapshot):
    params = R.parse_params(rewards_params(demo_snapshot))  # Estimating is the keyed form of these
    for value, kind in ((Context(demo_snapshot), "Context"), (Mutable(1), "Mutable"), (params, "Params")):
        with pytest.raises(TypeError, match=f"cannot key an input of (type )?{kind}"):
            Keys().of(Deferred((value,), staker_body))


def test_a_key_covers_every_value_a_maker_receives(demo_snapshot):
    st = demo_snapshot.stakers[0]

    def key(*inputs, make=staker_body):
        return Keys().of(Deferred(inputs, make))

    assert key(st) == key(dataclasses.replace(st))  # equal values, another object: the same key
    assert key(st) != key(dataclasses.replace(st, eligible=not st.eligible))
    assert key(st, True, make=staker_and_price) != key(st, 1, make=staker_and_price)
    assert len({key(st, v, make=staker_and_price) for v in (1, True, 1.0, "1", b"1", (1,), [1], {1: 1}, None)}) == 9
    assert key(Each(address, (st,))) != key(Each(staker_body, (st,)))  # the row function is in the key
    assert key(st, make=staker_body) != key(st, make=address)  # and so is the maker


def fresh(x):
    """An equal value sharing no object with ``x`` (nor anything a record caches beside its fields)."""
    if type(x) in (tuple, list):
        return type(x)(fresh(v) for v in x)
    if type(x) is dict:
        return {fresh(k): fresh(v) for k, v in x.items()}
    if type(x) is Each:
        return Each(x.row, fresh(x.items))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return type(x)(**{f.name: fresh(getattr(x, f.name)) for f in dataclasses.fields(x)})
    return x


def test_every_deferred_body_is_made_from_its_declared_inputs_alone(demo_snapshot, demo_profile):
    ctx = pipeline.context(demo_snapshot, demo_profile)
    made = 0
    for _, path, value in pipeline.bodies(ctx):
        if type(value) is Deferred:
            again = Deferred(fresh(value.inputs), value.make, value.meta, value.stamp)
            assert pipeline.encode(path, resolve(again)) == pipeline.encode(path, resolve(value)), path
            made += 1
    assert made > 2 * len(demo_snapshot.stakers)  # every per-staker file and the large aggregates
