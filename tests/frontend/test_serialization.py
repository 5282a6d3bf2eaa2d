"""kael.save and kael.load against torch.save and torch.load: checkpoints cross both ways with
their values, dtypes, shapes, strides, offsets and shared storages; bad input is refused."""

import argparse
import collections
import fractions
import io
import pickle
import struct
import zipfile
import zlib

import numpy as np
import pytest
import torch
from kernel_helpers import KAEL_DTYPES, TORCH_DTYPES

import kael
from kael.frontend import serialization
from kael.runtime import dtypes

SHAPES = [(), (0,), (5,), (2, 3, 1, 4), (2, 0, 3)]


def _torch_values(shape, dtype: torch.dtype) -> torch.Tensor:
    """Seeded values of every dtype: random floats (with a NaN and an inf when large enough),
    integers across the dtype's range, random bools."""
    g = torch.Generator().manual_seed(7)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point:
        t = (torch.randn(shape, generator=g, dtype=torch.float64) * 100).to(dtype)
        if t.numel() >= 3:
            t.view(-1)[:2] = torch.tensor([float("nan"), float("inf")], dtype=dtype)
        return t
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=g, dtype=torch.int64).to(dtype)


def _as_kael(t: torch.Tensor) -> kael.Tensor:
    """A kael tensor over a copy of a torch tensor's bytes, in its layout."""
    return kael.from_dlpack(t.clone())


def _bits(t: torch.Tensor) -> np.ndarray:
    """The elements' exact bytes (NaN payloads and bfloat16 included)."""
    t = t.contiguous()
    return t.view(torch.uint8).numpy() if t.dim() else t.reshape(1).view(torch.uint8).numpy()


def _kael_bits(k: kael.Tensor) -> np.ndarray:
    """A kael tensor's elements' exact bytes, read through torch (DLPack) for bfloat16."""
    return _bits(torch.from_dlpack(k.contiguous()))


def assert_same(k: kael.Tensor, t: torch.Tensor) -> None:
    """Same dtype, shape, strides, storage offset and bytes."""
    assert isinstance(k, kael.Tensor)
    assert k.dtype is KAEL_DTYPES[t.dtype]
    assert k.shape == tuple(t.shape)
    assert k.stride() == t.stride()
    assert k.storage_offset() == t.storage_offset()
    np.testing.assert_array_equal(_kael_bits(k), _bits(t))


def _torch_saved(obj) -> io.BytesIO:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return buffer


def _kael_saved(obj, **kwargs) -> io.BytesIO:
    buffer = io.BytesIO()
    kael.save(obj, buffer, **kwargs)
    buffer.seek(0)
    return buffer


def _records(buffer: io.BytesIO) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as zf:
        return {info.filename: zf.read(info) for info in zf.infolist()}


def _rezipped(records: dict[str, bytes]) -> io.BytesIO:
    """An archive of the given records (stored), as a checkpoint a test has edited."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for name, data in records.items():
            zf.writestr(name, data)
    out.seek(0)
    return out


def _edited_pickle(obj, old: bytes, new: bytes) -> io.BytesIO:
    """torch.save(obj) with `old` replaced by `new` in data.pkl."""
    records = _records(_torch_saved(obj))
    assert old in records["archive/data.pkl"]
    records["archive/data.pkl"] = records["archive/data.pkl"].replace(old, new)
    return _rezipped(records)


# ---- every dtype and shape, both ways -----------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", dtypes.ALL_DTYPES, ids=str)
def test_torch_checkpoint_loads_with_every_dtype_and_shape(dtype, shape):
    t = _torch_values(shape, TORCH_DTYPES[dtype])
    assert_same(kael.load(_torch_saved(t)), t)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", dtypes.ALL_DTYPES, ids=str)
def test_kael_checkpoint_loads_in_torch_with_every_dtype_and_shape(dtype, shape):
    t = _torch_values(shape, TORCH_DTYPES[dtype])
    loaded = torch.load(_kael_saved(_as_kael(t)))
    assert loaded.dtype == t.dtype and loaded.stride() == t.stride()
    np.testing.assert_array_equal(_bits(loaded), _bits(t))


@pytest.mark.parametrize("dtype", dtypes.ALL_DTYPES, ids=str)
def test_kael_round_trip_keeps_every_dtype(dtype):
    t = _torch_values((3, 4), TORCH_DTYPES[dtype])
    k = _as_kael(t)
    assert_same(kael.load(_kael_saved(k)), t)


# ---- layouts and shared storages -----------------------------------------------------------


def _views(base):
    """Views of one storage in four layouts (kael and torch spell them alike)."""
    return {
        "base": base,
        "transposed": base.t(),
        "offset_row": base[1],
        "strided_slice": base[1:, ::2],
        "expanded": base[0:1].expand(3, 4),
    }


def test_torch_views_of_one_storage_load_as_views_of_one_kael_storage():
    views = _views(torch.arange(12, dtype=torch.float32).reshape(3, 4))
    loaded = kael.load(_torch_saved(views))
    for name, t in views.items():
        assert_same(loaded[name], t)
    loaded["transposed"][2, 1] = -5.0  # base[1, 2]: every view sees the write
    assert loaded["base"][1, 2].item() == -5.0
    assert loaded["offset_row"][2].item() == -5.0
    assert loaded["strided_slice"][0, 1].item() == -5.0


def test_kael_views_of_one_storage_load_in_torch_as_views_of_one_storage():
    views = _views(kael.arange(12, dtype=kael.float32).view(3, 4))
    loaded = torch.load(_kael_saved(views))
    expected = _views(torch.arange(12, dtype=torch.float32).reshape(3, 4))
    pointer = loaded["base"].untyped_storage().data_ptr()
    for name, t in expected.items():
        got = loaded[name]
        assert got.untyped_storage().data_ptr() == pointer
        assert (got.stride(), got.storage_offset()) == (t.stride(), t.storage_offset())
        assert torch.equal(got, t)
    loaded["transposed"][2, 1] = -5.0
    assert loaded["base"][1, 2].item() == -5.0


def test_a_view_alone_saves_its_whole_storage():
    # torch writes the storage the view sits in, not just the view's elements
    base = kael.arange(10, dtype=kael.int64)
    loaded = torch.load(_kael_saved(base[7:9]))
    assert loaded.storage_offset() == 7 and loaded.untyped_storage().nbytes() == 80
    assert loaded.tolist() == [7, 8]


def test_views_of_one_storage_as_two_dtypes_are_refused_as_torch_does():
    base = kael.arange(4, dtype=kael.int32)
    with pytest.raises(kael.Error, match="view the same data as different types"):
        kael.save([base, base.view(kael.float32)], io.BytesIO())
    tb = torch.arange(4, dtype=torch.int32)
    with pytest.raises(RuntimeError, match="view the same data as different types"):
        torch.save([tb, tb.view(torch.float32)], io.BytesIO())


def test_separate_storages_stay_separate():
    a, b = kael.ones(3), kael.ones(3)
    loaded = torch.load(_kael_saved([a, b]))
    assert loaded[0].untyped_storage().data_ptr() != loaded[1].untyped_storage().data_ptr()
    back = kael.load(_torch_saved([torch.ones(3), torch.ones(3)]))
    assert not back[0].shares_storage(back[1])


# ---- real models' state dicts --------------------------------------------------------------


def _models():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
    conv(torch.randn(2, 3, 6, 6))  # running statistics and num_batches_tracked move
    return {"mlp": mlp, "conv_bn": conv}


@pytest.mark.parametrize("name", ["mlp", "conv_bn"])
def test_torch_state_dict_loads_with_equal_values(name):
    state = _models()[name].state_dict()
    loaded = kael.load(_torch_saved(state))
    assert type(loaded) is collections.OrderedDict and list(loaded) == list(state)
    for key, t in state.items():
        assert_same(loaded[key], t)


def test_batch_norm_counter_loads_as_a_0d_int64():
    loaded = kael.load(_torch_saved(_models()["conv_bn"].state_dict()))
    counter = loaded["1.num_batches_tracked"]
    assert (counter.dtype, counter.shape, counter.item()) == (kael.int64, (), 1)


@pytest.mark.parametrize("name", ["mlp", "conv_bn"])
def test_kael_saved_state_dict_loads_into_the_torch_model(name):
    model = _models()[name]
    state = model.state_dict()
    loaded = kael.load(_torch_saved(state))
    fresh = _models()[name]
    for parameter in fresh.parameters():
        torch.nn.init.zeros_(parameter)
    fresh.load_state_dict(torch.load(_kael_saved(loaded)))
    for key, t in fresh.state_dict().items():
        assert torch.equal(t, state[key])


def test_parameters_load_as_plain_tensors():
    parameters = list(_models()["mlp"].parameters())
    loaded = kael.load(_torch_saved(parameters))
    for k, t in zip(loaded, parameters, strict=True):
        assert_same(k, t.detach())


# ---- containers, Python values, dtypes, sizes ---------------------------------------------


def _nested(lib):
    return {
        "list": [lib.ones(2), (1, 2.5, None), "text"],
        "tuple": (True, b"bytes", {3, 4}),
        "ordered": collections.OrderedDict([("z", lib.zeros(1, dtype=lib.int8)), ("a", 7)]),
        "dtypes": [lib.float32, lib.bfloat16, lib.bool, lib.uint8],
        "size": lib.Size([2, 3]),
        "device": lib.device("cpu"),
        "deep": {"x": [{"y": lib.arange(3)}]},
        "big": 2**70,
    }


def _compare_nested(k, t) -> None:
    """A kael-side object against its torch-side mirror, recursively."""
    if isinstance(t, torch.Tensor):
        assert_same(k, t)
    elif isinstance(t, torch.dtype):
        assert k is KAEL_DTYPES[t]
    elif isinstance(t, torch.Size):
        assert type(k) is kael.Size and tuple(k) == tuple(t)
    elif isinstance(t, torch.device):
        assert k == kael.device(str(t))
    elif isinstance(t, dict):
        assert type(k) is type(t) and list(k) == list(t)
        for key in t:
            _compare_nested(k[key], t[key])
    elif isinstance(t, (list, tuple)):
        assert type(k) is type(t) and len(k) == len(t)
        for a, b in zip(k, t, strict=True):
            _compare_nested(a, b)
    else:
        assert type(k) is type(t) and k == t


def test_nested_containers_cross_from_torch():
    t = _nested(torch)
    _compare_nested(kael.load(_torch_saved(t)), t)


@pytest.mark.parametrize("protocol", [2, 4, pickle.HIGHEST_PROTOCOL])
def test_nested_containers_cross_to_torch(protocol):
    # torch's weights_only unpickler reads protocol 2 only (its own protocol-4 files too)
    buffer = _kael_saved(_nested(kael), pickle_protocol=protocol)
    loaded = torch.load(buffer, weights_only=protocol == 2)
    _compare_nested(_nested(kael), loaded)


def test_dtypes_pickle_as_torch_globals():
    data = _records(_kael_saved([kael.float16, kael.Size([1])]))["archive/data.pkl"]
    assert b"ctorch\nfloat16\n" in data and b"ctorch\nSize\n" in data
    assert b"kael" not in data


# ---- files, paths and the archive's records -----------------------------------------------


@pytest.mark.parametrize("weights_only", [True, False])
def test_layouts_cross_both_ways_as_torch_pickles_them(weights_only):
    loaded = kael.load(_torch_saved({"layout": torch.strided}), weights_only=weights_only)
    assert loaded == {"layout": kael.strided}
    ours = _records(_kael_saved({"layout": kael.ones(1).layout}))["archive/data.pkl"]
    assert ours == _records(_torch_saved({"layout": torch.strided}))["archive/data.pkl"]
    assert torch.load(_kael_saved([kael.strided]), weights_only=weights_only) == [torch.strided]


def test_a_layout_kael_lacks_is_refused_naming_it():
    with pytest.raises(kael.TypeError, match="kael has no layout 'torch.sparse_coo'"):
        kael.load(_torch_saved({"layout": torch.sparse_coo}))


def test_paths_and_streams_load_and_save(tmp_path):
    x = kael.arange(5, dtype=kael.float64)
    for target in (tmp_path / "a.pt", str(tmp_path / "b.pt")):
        kael.save({"x": x}, target)
        assert_same(kael.load(target)["x"], torch.load(target)["x"])
    torch.save(torch.ones(2), tmp_path / "c.pt")
    with open(tmp_path / "c.pt", "rb") as opened:
        assert_same(kael.load(opened), torch.ones(2))


def test_archive_has_torchs_records_in_torchs_order(tmp_path):
    obj = {"a": torch.ones(2), "b": torch.arange(3)}
    torch.save(obj, tmp_path / "torch_made.pt")
    kael.save(kael.load(tmp_path / "torch_made.pt"), tmp_path / "kael_made.pt")
    with zipfile.ZipFile(tmp_path / "torch_made.pt") as theirs:
        expected = [n.replace("torch_made/", "kael_made/") for n in theirs.namelist()]
    with zipfile.ZipFile(tmp_path / "kael_made.pt") as ours:
        assert ours.namelist() == expected
        assert ours.read("kael_made/version") == b"3\n"
        assert ours.read("kael_made/.format_version") == b"1"
        assert ours.read("kael_made/.storage_alignment") == b"64"
        assert ours.read("kael_made/byteorder") == b"little"
        assert len(ours.read("kael_made/.data/serialization_id")) == 40
        assert all(info.compress_type == zipfile.ZIP_STORED for info in ours.infolist())
    assert _records(_kael_saved(1)).keys() >= {"archive/data.pkl"}  # a stream: "archive/"


def test_every_record_starts_on_a_64_byte_boundary():
    buffer = _kael_saved([kael.ones(n) for n in (1, 3, 17, 100)])
    raw = buffer.getvalue()
    with zipfile.ZipFile(buffer) as zf:
        for info in zf.infolist():
            name_length, extra_length = struct.unpack_from("<HH", raw, info.header_offset + 26)
            assert (info.header_offset + 30 + name_length + extra_length) % 64 == 0


def test_mmap_loads_from_the_file_without_writing_it(tmp_path):
    path = tmp_path / "m.pt"
    base = torch.arange(6.0)
    torch.save({"a": base, "b": base[2:]}, path)
    before = path.read_bytes()
    loaded = kael.load(path, mmap=True)
    assert_same(loaded["b"], torch.arange(6.0)[2:])
    loaded["a"].add_(1)  # copy-on-write: the view sees it, the file does not
    assert loaded["b"].tolist() == [3.0, 4.0, 5.0, 6.0]
    assert path.read_bytes() == before
    with pytest.raises(kael.ValueError, match="must be a file path in order to use the mmap"):
        kael.load(io.BytesIO(before), mmap=True)


def _big_endian(obj, widths: dict[str, int]) -> io.BytesIO:
    """torch.save(obj) rewritten as a big-endian machine writes it: each storage's words of
    `widths[key]` bytes swapped."""
    records = _records(_torch_saved(obj))
    records["archive/byteorder"] = b"big"
    for key, width in widths.items():
        name = f"archive/data/{key}"
        records[name] = np.frombuffer(records[name], f"<u{width}").byteswap().tobytes()
    return _rezipped(records)


def test_big_endian_checkpoint_loads_swapped():
    t = {"f": torch.tensor([1.5, -2.25]), "i": torch.tensor([1, 256], dtype=torch.int16)}
    loaded = kael.load(_big_endian(t, {"0": 4, "1": 2}))
    assert_same(loaded["f"], t["f"])
    assert_same(loaded["i"], t["i"])


@pytest.mark.parametrize("dtype, part", [(torch.complex64, 4), (torch.complex128, 8)])
def test_big_endian_complex_swaps_real_and_imaginary_parts_each(dtype, part):
    t = torch.tensor([1 + 2j, 3 - 4j, -0.5j], dtype=dtype)
    checkpoint = _big_endian(t, {"0": part})
    expected = torch.load(io.BytesIO(checkpoint.getvalue()))
    loaded = kael.load(checkpoint)
    assert str(loaded.dtype) == str(expected.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(loaded.numpy(), expected.numpy())
    assert expected.tolist() == t.tolist()


def test_unknown_byteorder_is_refused_naming_it():
    records = _records(_torch_saved(torch.ones(1)))
    records["archive/byteorder"] = b"middle"
    with pytest.raises(kael.ValueError, match="Unknown endianness type: middle"):
        kael.load(_rezipped(records))


# ---- map_location ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "map_location",
    [
        None,
        "cpu",
        kael.device("cpu"),
        torch.device("cpu"),
        {"cpu": "cpu"},
        lambda s, loc: s,
        lambda s, loc: None,
    ],
    ids=["none", "str", "device", "torch device", "dict", "callable", "callable_none"],
)
def test_map_location_forms_for_the_host(map_location):
    loaded = kael.load(_torch_saved(torch.arange(4)), map_location=map_location)
    assert loaded.device == kael.device("cpu")
    assert_same(loaded, torch.arange(4))


def test_callable_map_location_is_given_the_storage_and_its_location():
    seen = []
    kael.load(
        _torch_saved([torch.ones(3), torch.ones(2)]),
        map_location=lambda s, loc: seen.append((s.shape, s.dtype, loc)),
    )
    assert seen == [((12,), kael.uint8, "cpu"), ((8,), kael.uint8, "cpu")]


def _cuda_checkpoint() -> io.BytesIO:
    """A torch checkpoint whose storage was saved from "cuda:0" (edited: torch here has no GPU)."""
    return _edited_pickle(torch.arange(3.0), b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")


@pytest.mark.parametrize("map_location", ["cpu", {"cuda:0": "cpu"}, lambda s, loc: s])
def test_cuda_checkpoint_maps_to_the_host(map_location):
    loaded = kael.load(_cuda_checkpoint(), map_location=map_location)
    assert loaded.device == kael.device("cpu") and loaded.tolist() == [0.0, 1.0, 2.0]


def test_cuda_checkpoint_without_a_gpu_names_the_way_out(monkeypatch):
    monkeypatch.setattr(serialization, "cuda_is_available", lambda: False)
    with pytest.raises(kael.Error, match="CUDA device but .* map_location='cpu'"):
        kael.load(_cuda_checkpoint())
    with pytest.raises(kael.Error, match="CUDA device"):
        kael.load(_torch_saved(torch.ones(1)), map_location="cuda")


def test_bad_map_locations_are_refused():
    with pytest.raises(kael.TypeError, match="map_location must be .* got int"):
        kael.load(_torch_saved(torch.ones(1)), map_location=3)
    with pytest.raises(kael.ValueError, match="unknown device 'mps'"):
        kael.load(_torch_saved(torch.ones(1)), map_location="mps")
    with pytest.raises(kael.TypeError, match="must return the storage .* got str"):
        kael.load(_torch_saved(torch.ones(1)), map_location=lambda s, loc: "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("map_location", ["cuda", kael.device("cuda"), lambda s, loc: s.cuda()])
def test_map_location_to_cuda(map_location):
    loaded = kael.load(_torch_saved(torch.arange(4.0)[1:]), map_location=map_location)
    assert loaded.device == kael.device("cuda") and loaded.storage_offset() == 1
    assert loaded.cpu().tolist() == [1.0, 2.0, 3.0]


@pytest.mark.gpu
def test_cuda_tensors_save_from_the_device_as_cuda0():
    x = kael.arange(6, dtype=kael.float32, device="cuda").view(2, 3)
    buffer = _kael_saved({"x": x, "t": x.t()})
    assert b"cuda:0" in _records(buffer)["archive/data.pkl"]
    loaded = torch.load(buffer, map_location="cpu")
    assert loaded["x"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert loaded["t"].untyped_storage().data_ptr() == loaded["x"].untyped_storage().data_ptr()
    back = kael.load(_kael_saved({"x": x}))
    assert back["x"].device == kael.device("cuda") and back["x"].cpu().tolist() == x.cpu().tolist()


# ---- weights_only and foreign globals -----------------------------------------------------


def test_weights_only_refuses_a_custom_class_naming_it_as_torch_does():
    buffer = _torch_saved({"x": fractions.Fraction(1, 3)})
    with pytest.raises(kael.Error, match=r"Unsupported global: GLOBAL fractions\.Fraction"):
        kael.load(buffer)
    buffer.seek(0)  # and torch's type, which the usual weights_only=False fallback catches
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL fractions\.Fraction"):
        kael.load(buffer)
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL fractions\.Fraction"):
        torch.load(buffer)


def test_weights_only_refuses_a_callable_before_calling_it(tmp_path):
    marker = tmp_path / "ran"
    command = f"touch {marker}".encode()
    data = b"\x80\x02cos\nsystem\nX" + struct.pack("<I", len(command)) + command + b"\x85R."
    with pytest.raises(kael.Error, match=r"Unsupported global: GLOBAL os\.system"):
        kael.load(_rezipped({"archive/data.pkl": data}))
    assert not marker.exists()


def test_weights_only_false_loads_other_globals():
    buffer = _torch_saved({"x": fractions.Fraction(1, 3), "t": torch.ones(1)})
    loaded = kael.load(buffer, weights_only=False)
    assert loaded["x"] == fractions.Fraction(1, 3)
    assert_same(loaded["t"], torch.ones(1))


def test_torch_globals_kael_lacks_are_refused_naming_them():
    buffer = _torch_saved(torch.nn.Linear(2, 2))
    with pytest.raises(kael.Error, match=r"GLOBAL torch\.nn\.modules\.linear\.Linear"):
        kael.load(buffer)
    buffer.seek(0)
    with pytest.raises(kael.Error, match=r"torch\.nn\.modules\.linear\.Linear: kael has no"):
        kael.load(buffer, weights_only=False)


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor")
@pytest.mark.parametrize(
    "make, dtype",
    [
        (lambda: torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.quint8), "quint8"),
        (lambda: torch.zeros(2, dtype=torch.uint16), "uint16"),
    ],
    ids=["quint8", "uint16"],
)
def test_dtypes_kael_lacks_are_refused_naming_them(make, dtype):
    with pytest.raises(kael.TypeError, match=f"kael has no dtype torch.{dtype}"):
        kael.load(_torch_saved(make()))


# ---- corrupt, truncated and legacy files --------------------------------------------------


def _good_checkpoint() -> bytes:
    return _torch_saved({"w": torch.arange(64.0), "b": torch.ones(3)}).getvalue()


@pytest.mark.parametrize("cut", [0, 10, 200, -30, -200], ids=lambda c: f"cut{c}")
def test_truncated_files_are_refused(cut):
    data = _good_checkpoint()
    with pytest.raises(kael.Error, match="truncated, corrupt or not a torch.save file"):
        kael.load(io.BytesIO(data[:cut]))


def test_a_flipped_byte_in_a_storage_fails_its_crc():
    data = bytearray(_good_checkpoint())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        info = zf.getinfo("archive/data/0")
        name_length, extra_length = struct.unpack_from("<HH", data, info.header_offset + 26)
        data[info.header_offset + 30 + name_length + extra_length + 5] ^= 0xFF
    with pytest.raises(kael.Error, match="corrupt.*CRC"):
        kael.load(io.BytesIO(bytes(data)))


def test_a_corrupt_pickle_is_refused():
    records = _records(_torch_saved(torch.ones(2)))
    records["archive/data.pkl"] = records["archive/data.pkl"][:40]
    with pytest.raises(kael.Error, match="corrupt"):
        kael.load(_rezipped(records))


def test_an_archive_without_data_pkl_is_refused_naming_the_record():
    with pytest.raises(kael.Error, match="no record archive/data.pkl"):
        kael.load(_rezipped({"archive/other": b"x"}))
    with pytest.raises(kael.Error, match="zip archive is empty"):
        kael.load(_rezipped({}))


def test_a_missing_storage_record_is_refused_naming_it():
    records = _records(_torch_saved(torch.ones(2)))
    del records["archive/data/0"]
    with pytest.raises(kael.Error, match="no record archive/data/0"):
        kael.load(_rezipped(records))


def test_a_storage_of_the_wrong_size_is_refused():
    records = _records(_torch_saved(torch.ones(2)))
    records["archive/data/0"] = records["archive/data/0"][:4]
    with pytest.raises(kael.Error, match="holds 4 bytes .* needs 8"):
        kael.load(_rezipped(records))


def test_a_view_past_its_storage_is_refused():
    # size (2,) -> (3,) over a 2-element storage
    buffer = _edited_pickle(torch.ones(2), b"K\x02\x85", b"K\x03\x85")
    with pytest.raises(kael.Error, match="needs 12 bytes but storage has 8"):
        kael.load(buffer)


@pytest.mark.parametrize("data", [b"", b"not a checkpoint", bytes(range(256)) * 4])
def test_other_bytes_are_refused(data):
    with pytest.raises(kael.Error, match="not a torch.save file"):
        kael.load(io.BytesIO(data))


def test_legacy_format_is_refused_naming_it():
    buffer = io.BytesIO()
    torch.save(torch.ones(2), buffer, _use_new_zipfile_serialization=False)
    buffer.seek(0)
    with pytest.raises(kael.Error, match=r"legacy \(pre-1.6, non-zip\) torch.save format"):
        kael.load(buffer)
    with pytest.raises(kael.ValueError, match="legacy format"):
        kael.save(kael.ones(2), io.BytesIO(), _use_new_zipfile_serialization=False)


# ---- arguments ------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_pickle_protocols_in_range_are_read_by_torch(protocol):
    buffer = _kael_saved(kael.ones(2), pickle_protocol=protocol)
    loaded = torch.load(buffer, weights_only=protocol == 2)
    assert loaded.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("protocol", [1, pickle.HIGHEST_PROTOCOL + 1, 2.0])
def test_pickle_protocols_out_of_range_are_refused(protocol):
    with pytest.raises(kael.ValueError, match=f"pickle_protocol must be .* got {protocol}"):
        kael.save(kael.ones(2), io.BytesIO(), pickle_protocol=protocol)


def test_bad_arguments_are_refused():
    with pytest.raises(kael.TypeError, match="f must be a path or a binary file object, got int"):
        kael.save(kael.ones(1), 3)
    with pytest.raises(kael.TypeError, match="f must be a path or a binary file object, got int"):
        kael.load(3)
    with pytest.raises(kael.TypeError, match=r"unexpected keyword arguments \['bogus'\]"):
        kael.load(_torch_saved(1), bogus=1)
    with pytest.raises(kael.TypeError, match="weights_only must be a bool or None, got str"):
        kael.load(_torch_saved(1), weights_only="yes")
    with pytest.raises(kael.TypeError, match="cannot pickle"):
        kael.save(lambda: 0, io.BytesIO())


def test_an_unpicklable_object_is_a_kael_type_error_as_torchs_type_error():
    with pytest.raises(TypeError, match="cannot pickle 'generator' object"):
        torch.save((i for i in range(3)), io.BytesIO())
    with pytest.raises(kael.TypeError, match="cannot pickle 'generator' object"):
        kael.save((i for i in range(3)), io.BytesIO())


def test_weights_only_none_is_torchs_default():
    saved = _torch_saved({"t": torch.ones(2), "c": fractions.Fraction(1, 3)}).getvalue()
    for lib, refusal in ((torch, pickle.UnpicklingError), (kael, pickle.UnpicklingError)):
        with pytest.raises(refusal, match="Unsupported global: GLOBAL fractions.Fraction"):
            lib.load(io.BytesIO(saved), weights_only=None)  # None: weights only
        loaded = lib.load(io.BytesIO(saved), pickle_module=pickle, weights_only=None)
        assert loaded["c"] == fractions.Fraction(1, 3)  # with a pickle module: everything
        assert loaded["t"].tolist() == [1.0, 1.0]
    with pytest.raises(kael.Error, match="Can not safely load weights when explicit pickle_module"):
        kael.load(io.BytesIO(saved), pickle_module=pickle, weights_only=True)
    with pytest.raises(
        RuntimeError, match="Can not safely load weights when explicit pickle_module"
    ):
        torch.load(io.BytesIO(saved), pickle_module=pickle, weights_only=True)


def test_encoding_keyword_is_passed_to_the_unpickler():
    assert kael.load(_torch_saved({"s": "é"}), encoding="utf-8") == {"s": "é"}


# ---- hostile pickles: weights_only never lets a file change shared objects ----------------


def _text(s: str) -> bytes:
    """A pickled str (BINUNICODE)."""
    return b"X" + struct.pack("<I", len(s.encode())) + s.encode()


_MINIMAL = {"archive/byteorder": b"little", "archive/version": b"3\n"}  # what torch needs


def _pickle_only(data: bytes) -> io.BytesIO:
    """A checkpoint holding just this data.pkl (and the records torch.load requires)."""
    return _rezipped({"archive/data.pkl": data, **_MINIMAL})


def _build(target: bytes, attribute: str, value: bytes) -> bytes:
    """A pickle that BUILDs {attribute: value} (as slot state) onto the object `target` pushes."""
    return b"\x80\x02" + target + b"N}" + _text(attribute) + value + b"s\x86b."


_FLOAT32_ITEMSIZE_1 = _build(b"ctorch\nfloat32\n", "itemsize", b"K\x01")
_FLOAT_STORAGE_AS_INT32 = _build(b"ctorch\nFloatStorage\n", "dtype", b"ctorch\nint32\n")
_COUNTER_PATCH = _build(b"ccollections\nCounter\n", "most_common", b"N")
_CPU_DEVICE_PATCH = _build(b"ctorch\ndevice\nX\x03\x00\x00\x00cpu\x85R", "type", _text("cuda"))


def _honest_load_is_right() -> None:
    """A later, honest checkpoint still loads with torch's values and dtypes."""
    t = {"w": torch.tensor([1.5, 2.5]), "i": torch.arange(3, dtype=torch.int32)}
    loaded = kael.load(_torch_saved(t))
    assert_same(loaded["w"], t["w"])
    assert_same(loaded["i"], t["i"])


@pytest.mark.parametrize("weights_only", [True, False])
def test_build_onto_a_dtype_global_is_refused_and_the_dtype_kept(weights_only):
    with pytest.raises(kael.Error, match=r"the global torch\.float32"):
        kael.load(_pickle_only(_FLOAT32_ITEMSIZE_1), weights_only=weights_only)
    assert kael.float32.itemsize == 4
    assert kael.arange(8, dtype=kael.float32).untyped_storage().nbytes() == 32
    _honest_load_is_right()
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        torch.load(_pickle_only(_FLOAT32_ITEMSIZE_1))


@pytest.mark.parametrize("weights_only", [True, False])
def test_build_onto_a_storage_type_is_refused_and_later_loads_are_honest(weights_only):
    with pytest.raises(kael.Error, match=r"global torch\.FloatStorage"):
        kael.load(_pickle_only(_FLOAT_STORAGE_AS_INT32), weights_only=weights_only)
    _honest_load_is_right()


@pytest.mark.parametrize("weights_only", [True, False])
def test_build_onto_an_allowed_class_is_refused_and_counter_untouched(weights_only):
    most_common = collections.Counter.most_common
    with pytest.raises(kael.Error, match=r"global collections\.Counter"):
        kael.load(_pickle_only(_COUNTER_PATCH), weights_only=weights_only)
    assert collections.Counter.most_common is most_common
    assert collections.Counter("aab").most_common(1) == [("a", 2)]
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        torch.load(_pickle_only(_COUNTER_PATCH))


@pytest.mark.parametrize("weights_only", [True, False])
def test_build_onto_the_shared_cpu_device_is_refused(weights_only):
    with pytest.raises(kael.Error, match="BUILD .* a Device"):
        kael.load(_pickle_only(_CPU_DEVICE_PATCH), weights_only=weights_only)
    assert kael.device("cpu").type == "cpu" and str(kael.ones(1).device) == "cpu"


@pytest.mark.parametrize("weights_only", [True, False])
def test_build_onto_a_loaded_tensor_is_refused(weights_only):
    records = _records(io.BytesIO(_tensor_checkpoint(0, (4,), (1,))))
    assert kael.load(_rezipped(records), weights_only=weights_only).tolist() == [1, 2, 3, 4]
    pickled = records["archive/data.pkl"]
    records["archive/data.pkl"] = pickled[:-1] + b"N}" + _text("_impl") + b"Ns\x86b."
    with pytest.raises(kael.Error, match="BUILD .* a Tensor"):
        kael.load(_rezipped(records), weights_only=weights_only)


def test_build_sets_the_metadata_of_a_state_dict_as_torch_does():
    state = _models()["conv_bn"].state_dict()
    loaded = kael.load(_torch_saved(state))
    assert type(loaded) is collections.OrderedDict
    assert loaded._metadata == state._metadata


def test_build_state_must_be_a_dict_of_names():
    ordered = b"\x80\x02ccollections\nOrderedDict\n)R"
    good = b"\x80\x02" + ordered[2:] + b"}" + _text("x") + b"K\x07sb."
    assert kael.load(_pickle_only(good)).x == 7
    assert torch.load(_pickle_only(good)).x == 7
    bad = b"\x80\x02" + ordered[2:] + b"K\x07b."
    with pytest.raises(kael.Error, match="BUILD's state must be a dict .* got int"):
        kael.load(_pickle_only(bad))


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x80\x02ctorch\nfloat32\n)R.", r"REDUCE may only call .* global torch\.float32"),
        (b"\x80\x02ctorch\nfloat32\n)\x81.", r"NEWOBJ may only make .* global torch\.float32"),
        (b"\x80\x02]K\x01K\x02s.", "SETITEM may only fill a dict .* not a list"),
        (b"\x80\x02\x8f(K\x01e.", "APPENDS may only fill a list, not a set"),
        (b"\x80\x02}K\x01a.", "APPEND may only fill a list, not a dict"),
        (b"\x80\x04](K\x01\x90.", "ADDITEMS may only fill a set, not a list"),
        (b"(ccollections\nOrderedDict\no.", "the pickle opcode OBJ is not allowed"),
        (b"(icollections\nOrderedDict\n.", "the pickle opcode INST is not allowed"),
        (b"\x80\x02cbuiltins\nbytearray\nJ\x00\x00\x00@\x85R.", r"bytearray\(1073741824\)"),
    ],
    ids=[
        "reduce_dtype",
        "newobj_dtype",
        "setitem_list",
        "appends_set",
        "append_dict",
        "additems_list",
        "obj",
        "inst",
        "bytearray_size",
    ],
)
def test_weights_only_refuses_opcodes_that_change_what_they_should_not(data, message):
    with pytest.raises(kael.Error, match=message):
        kael.load(_pickle_only(data))


def test_weights_only_allows_the_same_opcodes_on_their_own_containers():
    obj = {
        "list": [1, 2, 3],
        "dict": {"a": 1},
        "ordered": collections.OrderedDict(a=1),
        "counter": collections.Counter("aab"),
        "set": {1, 2},
        "bytes": b"\x00\xff",
        "bytearray": bytearray(b"ab"),
        "complex": 1 + 2j,
    }
    assert kael.load(_torch_saved(obj)) == torch.load(_torch_saved(obj)) == obj
    newobj = b"\x80\x02ccollections\nOrderedDict\n)\x81."
    assert kael.load(_pickle_only(newobj)) == collections.OrderedDict()
    additems = b"\x80\x04\x8f(K\x01K\x02\x90."  # protocol 4's set
    assert kael.load(_pickle_only(additems)) == {1, 2}


def _size_pickle(item: bytes) -> bytes:
    """A pickle of torch.Size([item])."""
    return b"\x80\x02ctorch\nSize\n]" + item + b"a\x85R."


def test_a_size_of_non_ints_is_refused_as_torch_refuses_it():
    data = _size_pickle(b"G" + struct.pack(">d", 2.0))
    with pytest.raises(kael.TypeError, match=r"takes an iterable of 'int' \(item 0 is 'float'\)"):
        kael.load(_pickle_only(data))
    with pytest.raises(TypeError, match=r"takes an iterable of 'int' \(item 0 is 'float'\)"):
        torch.load(_pickle_only(data))


def test_a_size_of_ints_and_bools_loads_as_torch_loads_it():
    for item, expected in ((b"K\x03", (3,)), (b"\x88", (1,))):
        loaded = kael.load(_pickle_only(_size_pickle(item)))
        assert type(loaded) is kael.Size and loaded == expected
        assert tuple(torch.load(_pickle_only(_size_pickle(item)))) == expected


def test_rebuild_from_type_calls_only_tensor_rebuild_functions():
    data = (
        b"\x80\x02ctorch._tensor\n_rebuild_from_type_v2\n"
        b"(ccollections\nOrderedDict\nctorch\nTensor\n)}tR."
    )
    with pytest.raises(kael.Error, match="may only call a tensor rebuild function"):
        kael.load(_pickle_only(data))
    t = torch.arange(3.0)
    t.note = "attributes make torch pickle through _rebuild_from_type_v2"
    assert b"_rebuild_from_type_v2" in _records(_torch_saved(t))["archive/data.pkl"]
    assert_same(kael.load(_torch_saved(t)), t.detach())


# ---- a stored record shorter than it says -----------------------------------------------


def _central_entry(data: bytes, name: str) -> int:
    """Where the central directory's entry for `name` begins."""
    at = data.find(b"PK\x01\x02")
    while data[at + 46 : at + 46 + struct.unpack_from("<H", data, at + 28)[0]] != name.encode():
        at = data.find(b"PK\x01\x02", at + 4)
    return at


def _with_sizes(data: bytes, name: str, crc: int, compressed: int, size: int) -> bytes:
    """The archive with the central directory's CRC and sizes of `name` rewritten."""
    edited = bytearray(data)
    struct.pack_into("<III", edited, _central_entry(data, name) + 16, crc, compressed, size)
    return bytes(edited)


class _Reduce:
    """Pickles as func(*args)."""

    def __init__(self, func, args) -> None:
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _tensor_checkpoint(offset, size, stride, numel: int = 4, data: bytes = b"") -> bytes:
    """A checkpoint of one float32 tensor with this geometry over a `numel`-float storage,
    pickled with any values (floats, bools) where torch writes ints."""
    marker = object()

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", torch.FloatStorage, "0", "cpu", numel) if obj is marker else None

    args = (marker, offset, size, stride, False, collections.OrderedDict())
    pickled = io.BytesIO()
    Pickler(pickled, 2).dump(_Reduce(torch._utils._rebuild_tensor_v2, args))
    data = data or struct.pack(f"<{numel}f", *range(1, numel + 1))
    records = {"archive/data.pkl": pickled.getvalue(), "archive/data/0": data, **_MINIMAL}
    return _rezipped(records).getvalue()


_SHORT = struct.pack("<f", 1.0)


@pytest.mark.parametrize("mmap", [False, True])
def test_a_stored_record_shorter_than_its_size_is_refused_naming_it(tmp_path, mmap):
    honest = _tensor_checkpoint(0, (4,), (1,), data=_SHORT + bytes(12))
    path = tmp_path / "short.pt"
    path.write_bytes(honest)
    assert kael.load(path, mmap=mmap).tolist() == [1.0, 0.0, 0.0, 0.0]
    path.write_bytes(_with_sizes(honest, "archive/data/0", zlib.crc32(_SHORT), 4, 16))
    with pytest.raises(kael.Error, match="record archive/data/0 declares 16 bytes but stores 4"):
        kael.load(path, mmap=mmap)


@pytest.mark.parametrize("mmap", [False, True])
def test_a_record_running_past_the_archive_is_refused_naming_it(tmp_path, mmap):
    path = tmp_path / "past.pt"
    path.write_bytes(_tensor_checkpoint(0, (4,), (1,)))
    assert kael.load(path, mmap=mmap).tolist() == [1.0, 2.0, 3.0, 4.0]
    numel = 1 << 16  # 256 KiB declared, far more than the file holds
    lying = _tensor_checkpoint(0, (4,), (1,), numel=numel, data=struct.pack("<4f", 1, 2, 3, 4))
    path.write_bytes(_with_sizes(lying, "archive/data/0", 0, 4 * numel, 4 * numel))
    # refused before 256 KiB are taken (a 500-byte file once reserved its declared 4 GB)
    with pytest.raises(kael.Error, match="record archive/data/0 runs past the end of the file"):
        kael.load(path, mmap=mmap)


# ---- sizes, strides and offsets must be ints ------------------------------------------------


@pytest.mark.parametrize(
    "offset, size, stride, message",
    [
        (0, (2.0,), (1,), r"size \(2\.0,\)"),
        (0, (4,), (0.5,), r"stride \(0\.5,\)"),
        (1.5, (2,), (1,), "storage_offset 1.5"),
        (1.0, (2,), (1,), "storage_offset 1.0"),
        (0, (True, 2), (2, 1), r"size \(True, 2\)"),
        (0, (2,), (True,), r"stride \(True,\)"),
        (True, (2,), (1,), "storage_offset True"),
        (0, "ab", (1, 1), "size 'ab'"),
        (0, None, (1,), "size None"),
    ],
)
def test_non_int_geometry_is_refused_naming_it_as_torch_refuses_it(offset, size, stride, message):
    checkpoint = _tensor_checkpoint(offset, size, stride)
    with pytest.raises(kael.TypeError, match=f"a tensor in the checkpoint has {message}"):
        kael.load(io.BytesIO(checkpoint))
    with pytest.raises(TypeError):
        torch.load(io.BytesIO(checkpoint))


@pytest.mark.parametrize(
    "offset, size, stride", [(1, (2,), (1,)), (1, [2], [1]), (0, (2, 2), (1, 2)), (3, (0,), (1,))]
)
def test_int_geometry_loads_as_torch_loads_it(offset, size, stride):
    checkpoint = _tensor_checkpoint(offset, size, stride)
    assert_same(kael.load(io.BytesIO(checkpoint)), torch.load(io.BytesIO(checkpoint)))


@pytest.mark.parametrize("numel", [4.0, -1, "4"])
def test_a_storage_of_non_int_numel_is_refused_naming_it(numel):
    checkpoint = _tensor_checkpoint(0, (2,), (1,), numel=numel, data=bytes(16))
    with pytest.raises(kael.Error, match=f"storage '0' in the checkpoint has {numel!r} elements"):
        kael.load(io.BytesIO(checkpoint))


# ---- bare storages ----------------------------------------------------------------------------


def _storage_bytes(storage) -> list[int]:
    return list(storage.tolist())


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
@pytest.mark.parametrize("typed", [False, True], ids=["untyped", "typed"])
@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.arange(4.0)[1:],
        lambda: torch.arange(6, dtype=torch.int16).view(2, 3).t(),
        lambda: torch.empty(0),
    ],
    ids=["float32_slice", "int16_transposed", "empty"],
)
def test_torch_saved_storage_loads_as_an_untyped_storage_of_its_bytes(make, typed):
    t = make()
    storage = t.storage() if typed else t.untyped_storage()
    loaded = kael.load(_torch_saved(storage))
    assert type(loaded) is kael.UntypedStorage
    assert loaded.nbytes() == t.untyped_storage().nbytes()
    assert _storage_bytes(loaded) == _storage_bytes(t.untyped_storage())


def test_a_storage_saved_with_its_tensor_is_that_tensors_storage():
    t = torch.arange(5, dtype=torch.uint8)
    loaded = kael.load(_torch_saved({"t": t[1:], "s": t.untyped_storage()}))
    assert loaded["s"] is loaded["t"].untyped_storage()
    assert_same(loaded["t"], t[1:])


@pytest.mark.parametrize("make", [lambda: kael.arange(4.0)[1:], lambda: kael.empty(0)])
def test_kael_saved_untyped_storage_loads_in_torch_as_torchs_own_does(make):
    x = make()
    buffer = _kael_saved(x.untyped_storage())
    assert b"ctorch.storage\nUntypedStorage\n" in _records(buffer)["archive/data.pkl"]
    loaded = torch.load(buffer)
    theirs = torch.load(_torch_saved(torch.from_dlpack(x).untyped_storage()))
    assert type(loaded) is type(theirs) and loaded.dtype == theirs.dtype == torch.uint8
    assert _storage_bytes(loaded) == _storage_bytes(x.untyped_storage())
    back = kael.load(_kael_saved(x.untyped_storage()))
    assert type(back) is kael.UntypedStorage
    assert _storage_bytes(back) == _storage_bytes(x.untyped_storage())


def test_a_storage_and_its_tensor_of_another_dtype_are_refused_as_torch_does():
    x = kael.arange(4.0)
    for obj in ([x, x.untyped_storage()], [x.untyped_storage(), x]):
        with pytest.raises(kael.Error, match="view the same data as different types"):
            kael.save(obj, io.BytesIO())
    t = torch.arange(4.0)
    with pytest.raises(RuntimeError, match="view the same data as different types"):
        torch.save([t, t.untyped_storage()], io.BytesIO())
    u8 = kael.arange(4, dtype=kael.uint8)
    loaded = torch.load(_kael_saved([u8, u8.untyped_storage()]))
    assert loaded[0].untyped_storage().data_ptr() == loaded[1].data_ptr()


# ---- a compressed data.pkl ----------------------------------------------------------------


def _deflated_pickle(data: bytes) -> io.BytesIO:
    """A checkpoint whose data.pkl is deflated (torch writes it stored, and reads both)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("archive/data.pkl", data, compress_type=zipfile.ZIP_DEFLATED)
        for name, record in _MINIMAL.items():
            zf.writestr(name, record)
    out.seek(0)
    return out


def _zeros_pickle(nbytes: int) -> bytes:
    """A pickle of `nbytes` zero bytes (BINBYTES8): deflate shrinks it about 1000 times."""
    return b"\x80\x04\x8e" + struct.pack("<Q", nbytes) + bytes(nbytes) + b"."


def test_a_deflated_data_pkl_loads_as_torch_loads_it():
    data = pickle.dumps({"a": [1, 2.5, "x"]}, protocol=2)
    assert kael.load(_deflated_pickle(data)) == torch.load(_deflated_pickle(data))


def test_a_deflated_data_pkl_inflating_past_the_limit_is_refused():
    checkpoint = _deflated_pickle(_zeros_pickle(8 << 20))
    assert len(checkpoint.getvalue()) < 64 << 10
    with pytest.raises(kael.Error, match=r"archive/data\.pkl inflates from \d+ to 8388620 bytes"):
        kael.load(checkpoint)


@pytest.mark.parametrize("over", [0, 1], ids=["at_limit", "past_limit"])
def test_the_inflation_limit_on_both_sides(monkeypatch, over):
    data = _zeros_pickle(1 << 16)
    checkpoint = _deflated_pickle(data)
    with zipfile.ZipFile(io.BytesIO(checkpoint.getvalue())) as zf:
        compressed = zf.getinfo("archive/data.pkl").compress_size
    monkeypatch.setattr(serialization, "_INFLATION_FLOOR", len(data) - over)
    monkeypatch.setattr(serialization, "_MAX_INFLATION", 0)
    if over:
        with pytest.raises(kael.Error, match=f"past kael.load's limit of {len(data) - 1} bytes"):
            kael.load(checkpoint)
    else:
        assert kael.load(checkpoint) == bytes(1 << 16)
    monkeypatch.setattr(serialization, "_INFLATION_FLOOR", 0)
    monkeypatch.setattr(serialization, "_MAX_INFLATION", -(-len(data) // compressed) - over)
    checkpoint.seek(0)
    if over:
        with pytest.raises(kael.Error, match="past kael.load's limit"):
            kael.load(checkpoint)
    else:
        assert kael.load(checkpoint) == bytes(1 << 16)


def test_mmap_of_an_empty_file_is_a_kael_error(tmp_path):
    path = tmp_path / "empty.pt"
    path.write_bytes(b"")
    with pytest.raises(kael.Error, match="cannot map the file"):
        kael.load(path, mmap=True)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_tensors_cross_both_ways_with_torch(dtype):
    values = torch.tensor([[1 + 2j, -3j], [0.5, 2 - 1j]], dtype=getattr(torch, dtype))
    loaded = kael.load(_torch_saved({"z": values, "view": values[:, 1]}))
    assert loaded["z"].dtype is getattr(kael, dtype)
    np.testing.assert_array_equal(loaded["z"].numpy(), values.numpy())
    np.testing.assert_array_equal(loaded["view"].numpy(), values[:, 1].numpy())
    buffer = io.BytesIO()
    kael.save({"z": loaded["z"]}, buffer)
    buffer.seek(0)
    np.testing.assert_array_equal(torch.load(buffer)["z"].numpy(), values.numpy())


# ---- serialization.add_safe_globals -----------------------------------------------------------


def _with_objects() -> bytes:
    """A torch checkpoint holding a Namespace and a NumPy array beside a tensor."""
    saved = {"w": torch.ones(2), "args": argparse.Namespace(lr=0.5), "arr": np.arange(3.0)}
    return _torch_saved(saved).getvalue()


_NUMPY_GLOBALS = [np.core.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype("f8"))]


def test_safe_globals_let_a_weights_only_load_build_what_torchs_does():
    saved = _with_objects()
    for lib in (torch, kael):
        with pytest.raises(pickle.UnpicklingError, match="GLOBAL argparse.Namespace"):
            lib.load(io.BytesIO(saved))
        with lib.serialization.safe_globals([argparse.Namespace, *_NUMPY_GLOBALS]):
            loaded = lib.load(io.BytesIO(saved))
        assert loaded["args"] == argparse.Namespace(lr=0.5)
        assert np.array_equal(loaded["arr"], np.arange(3.0))
        assert loaded["w"].tolist() == [1.0, 1.0]
        with pytest.raises(pickle.UnpicklingError):  # the block's globals are gone after it
            lib.load(io.BytesIO(saved))


def test_add_get_and_clear_safe_globals_keep_the_entries_as_given():
    kael.serialization.clear_safe_globals()
    try:
        pair = (argparse.Namespace, "argparse.Namespace")
        kael.serialization.add_safe_globals([fractions.Fraction, pair])
        assert kael.serialization.get_safe_globals() == [fractions.Fraction, pair]
        buffer = _torch_saved({"x": fractions.Fraction(1, 3)})
        assert kael.load(buffer)["x"] == fractions.Fraction(1, 3)
        with pytest.raises(kael.TypeError, match=r"must be \(object, 'module.name'\)"):
            kael.serialization.add_safe_globals([(argparse.Namespace, "Namespace")])
        assert kael.serialization.get_safe_globals() == [fractions.Fraction, pair]
    finally:
        kael.serialization.clear_safe_globals()
    assert kael.serialization.get_safe_globals() == []
