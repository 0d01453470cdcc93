"""The test's own callables (issue 27 items 1-2): one calling convention, the arity check before
anything starts, and an error of theirs named with the user's traceback instead of a silent wait."""

import json
import random

import numpy as np
import pytest

from pytest_streamchaos import AggregateOracle, IdentityOracle, RecordSpec, UserCodeError, Watch
from pytest_streamchaos.analysis.aggregate import AMOUNT
from pytest_streamchaos.analysis.oracle import COPIES
from pytest_streamchaos.harness import ChaosFixture
from pytest_streamchaos.observe.collector import Collector
from pytest_streamchaos.observe.file_sink import FileSinkCollector
from pytest_streamchaos.observe.outputs import collector_for
from pytest_streamchaos.usercode import RECORD, check_arity
from pytest_streamchaos.workload import records
from pytest_streamchaos.workload.generator import Generator


def store_sale(rec: RecordSpec) -> dict:
    return {"InvoiceNumber": str(rec.id), "StoreID": rec.key, "Total": 2.5 + rec.id, "Items": [1] * (rec.id % 3)}


def build(factory=store_sale, annotate=None, what="inputs['sales'] factory"):
    ids = np.arange(10, 16, dtype=np.int64)
    return records.build_batch(factory, 3, ids, ids % 4, 1_700_000_000_000 + ids, None, annotate, what)


# ---------------------------------------------------------------- one convention
@pytest.mark.parametrize("pair", [False, True])
def test_annotate_copies_and_amount_all_get_the_record_as_the_factory_made_it(pair):
    seen = []

    def factory(rec):
        value = store_sale(rec)
        return (f"store-{rec.key}", value) if pair else value  # a (key, value) pair: the value is the record

    oracles = (IdentityOracle(copies=lambda rec: seen.append(("copies", rec)) or len(rec["Items"])),
               AggregateOracle(5.0, agg="sum", amount=lambda rec: seen.append(("amount", rec)) or rec["Total"]))
    annotate = {"total": lambda rec: seen.append(("annotate", rec)) or rec["Total"],
                **oracles[0].record_callables(), **oracles[1].record_callables()}
    _, _, ann = build(factory, annotate)
    made = [store_sale(RecordSpec(i, f"k{i % 4}", i % 4, 0, random.Random())) for i in range(10, 16)]
    for who in ("annotate", "copies", "amount"):
        assert [r for w, r in seen if w == who] == made, who
    assert ann[COPIES].tolist() == [len(m["Items"]) for m in made]
    assert ann[AMOUNT].tolist() == ann["total"].tolist() == [m["Total"] for m in made]


def test_the_record_of_a_bytes_factory_is_its_bytes():
    _, _, ann = build(lambda rec: b"%d,%s" % (rec.id, rec.key.encode()), {"n": lambda rec: int(rec.split(b",")[0])})
    assert ann["n"].tolist() == list(range(10, 16))


# ---------------------------------------------------------------- the arity check
@pytest.mark.parametrize(("kwargs", "message"), [
    ({"watch": Watch(annotate={"amount": lambda rec, v: v["Total"]})},
     r"annotate\['amount'\] takes 2 parameters; expected \(record\) -> number: .*<lambda>\(rec, v\)"),
    ({"watch": Watch(annotate={"amount": lambda: 1})},
     r"annotate\['amount'\] takes 0 parameters; expected \(record\) -> number"),
    ({"oracle": IdentityOracle(copies=lambda sent, i: 1)},
     r"IdentityOracle\(copies=\) takes 2 parameters; expected \(record\) -> number"),
    ({"oracle": AggregateOracle(5.0, agg="sum", amount=lambda value, key: 1)},
     r"AggregateOracle\(amount=\) takes 2 parameters; expected \(record\) -> number"),
    ({"inputs": {"sales": lambda: {}}},
     r"inputs\['sales'\] factory takes 0 parameters; expected \(spec: RecordSpec\) -> record"),
    ({"inputs": {"sales": store_sale}, "outputs": {"totals": lambda value: [1]}},
     r"outputs\['totals'\] takes 1 parameter; expected \(value, key\) -> ids"),
    ({"watch": Watch(id_reader=lambda value, key, extra: [1])},
     r"id_reader takes 3 parameters; expected \(value, key\) -> ids"),
    ({"oracle": IdentityOracle(filter=lambda: None)},
     r"IdentityOracle\(filter=\) takes 0 parameters; expected \(sent: SentRecords\) -> one value per record"),
    ({"inputs": {"sales": None}, "watch": Watch(annotate={"total": lambda rec: 1})},
     r"annotate\['total'\] look\(s\) at the records a record factory makes, but input\(s\) \['sales'\] have none"),
    ({"oracle": IdentityOracle(copies=lambda rec: 1)}, r"IdentityOracle\(copies=\) look\(s\) at the records"),
])
def test_chaos_run_refuses_a_callable_it_cannot_call_before_anything_starts(tmp_path, kwargs, message):
    """No cluster, no Kafka, no job file: the check comes before any of them is touched."""
    chaos = ChaosFixture(cluster=None, kafka=None, workdir=tmp_path)
    reads_ids = "watch" in kwargs and kwargs["watch"].id_reader is not None
    if "inputs" not in kwargs and "oracle" not in kwargs and not reads_ids:
        kwargs["inputs"] = {"sales": store_sale}
    with pytest.raises(ValueError, match=message):
        chaos.run("no_such_job.py", **kwargs)
    assert list(tmp_path.iterdir()) == [], "nothing was made"


def test_callables_that_fit_pass_the_check_and_builtins_without_a_signature_are_trusted(tmp_path):
    chaos = ChaosFixture(cluster=None, kafka=None, workdir=tmp_path)
    with pytest.raises(Exception, match="job script 'no_such_job.py' not found"):  # got past the check
        chaos.run("no_such_job.py", inputs={"sales": store_sale},
                  outputs={"totals": lambda value, key=None: [1], "file:out": "InvoiceNumber"},
                  oracle=IdentityOracle(copies=max), watch=Watch(annotate={"n": len, "m": lambda rec, *more: 1}))
    check_arity(max, 1, "annotate['x']", RECORD)  # no signature: accepted


def test_generator_refuses_the_old_two_argument_annotate_naming_the_signature():
    with pytest.raises(ValueError, match=r"annotate\['lines'\] takes 2 parameters; expected \(record\) -> number"):
        Generator("x:1", "t", rate=10, record_factory=store_sale, annotate={"lines": lambda rec, v: 1})
    with pytest.raises(ValueError, match=r"takes 2 parameters; expected \(spec: RecordSpec\) -> record"):
        Generator("x:1", "t", rate=10, record_factory=lambda value, key: {})


# ---------------------------------------------------------------- their errors, named
def test_a_raising_factory_is_named_with_the_record_and_the_users_frame():
    def store_sale_no_price(rec):
        if rec.id == 13:
            raise ValueError("no price for store k1")
        return store_sale(rec)

    with pytest.raises(UserCodeError) as e:
        build(store_sale_no_price)
    msg = str(e.value)
    assert msg.startswith("inputs['sales'] factory ") and "store_sale_no_price raised ValueError: no price for store "\
        "k1 (record id 13)" in msg
    assert "in store_sale_no_price" in msg and 'raise ValueError("no price for store k1")' in msg
    assert "workload/records.py" not in msg, "only the user's frames"
    assert isinstance(e.value.__cause__, ValueError)


def test_a_raising_annotate_and_a_factory_returning_no_record_are_named():
    with pytest.raises(UserCodeError, match=r"annotate\['amount'\] .*<lambda> raised KeyError: 'Amount' \(record id "
                                            r"10\)"):
        build(annotate={"amount": lambda rec: rec["Amount"]})
    with pytest.raises(UserCodeError, match=r"IdentityOracle\(copies=\) .*<lambda> raised TypeError"):
        build(annotate=IdentityOracle(copies=lambda rec: len(rec["Total"])).record_callables())
    with pytest.raises(UserCodeError, match=r"inputs\['sales'\] factory .*<lambda> raised TypeError: record factory "
                                            r"returned a value of type int"):
        build(lambda rec: 42)


def test_a_raising_output_id_reader_is_the_tests_failure_not_a_malformed_output():
    def ledger_ids(value, key):
        return [json.loads(value)["order_id"]]

    col = collector_for("ledger", ledger_ids, "x:1")
    with pytest.raises(UserCodeError, match=r"outputs\['ledger'\] id reader .*ledger_ids raised KeyError: 'order_id' "
                                            r"\(output value b'\{\"id\": 3\}', key None\)"):
        col._reader.read(b'{"id": 3}', None)
    direct = Collector("x:1", "t", id_reader=ledger_ids)
    with pytest.raises(UserCodeError, match=r"^id_reader .*ledger_ids raised KeyError"):
        direct._reader.read(b'{"id": 3}', None)
    # the harness's own "key" reader: an output without a key is a malformed output, as before
    with pytest.raises(ValueError, match="output has no key") as e:
        collector_for("ledger", "key", "x:1")._reader.read(b'{"id": 3}', None)
    assert not isinstance(e.value, UserCodeError)


def test_a_raising_file_sink_reader_is_kept_as_the_failure(tmp_path):
    out = tmp_path / "out"
    (out / "_spark_metadata").mkdir(parents=True)
    (out / "part-0.json").write_text('{"InvoiceNumber": "1"}\n{"InvoiceNumber": "x"}\n')
    entry = {"path": f"file://{out}/part-0.json", "size": 1, "isDir": False, "modificationTime": 0,
             "blockReplication": 1, "blockSize": 1, "action": "add"}
    (out / "_spark_metadata" / "0").write_text("v1\n" + json.dumps(entry) + "\n")

    def invoice_ids(row, key):
        return [int(row["InvoiceNumber"])]  # "x" is not a number: the user's bug

    col = FileSinkCollector(out, invoice_ids, name="file:out", what="outputs['file:out'] id reader")
    col.poll()
    assert col.count == 1 and col.malformed == 0
    assert isinstance(col.failure, UserCodeError)
    assert "outputs['file:out'] id reader" in str(col.failure) and "raised ValueError" in str(col.failure)
