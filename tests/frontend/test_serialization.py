"""kael.save and kael.load against torch.save and torch.load: checkpoints cross both ways with
their values, dtypes, shapes, strides, offsets and shared storages; bad input is refused."""

import collections
import fractions
import io
import pickle
import struct
import zipfile

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


def test_big_endian_checkpoint_loads_swapped():
    t = {"f": torch.tensor([1.5, -2.25]), "i": torch.tensor([1, 256], dtype=torch.int16)}
    records = _records(_torch_saved(t))
    records["archive/byteorder"] = b"big"
    for key, width in (("0", 4), ("1", 2)):
        name = f"archive/data/{key}"
        records[name] = np.frombuffer(records[name], f"<u{width}").byteswap().tobytes()
    loaded = kael.load(_rezipped(records))
    assert_same(loaded["f"], t["f"])
    assert_same(loaded["i"], t["i"])


def test_unknown_byteorder_is_refused_naming_it():
    records = _records(_torch_saved(torch.ones(1)))
    records["archive/byteorder"] = b"middle"
    with pytest.raises(kael.ValueError, match="Unknown endianness type: middle"):
        kael.load(_rezipped(records))


# ---- map_location ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "map_location",
    [None, "cpu", kael.device("cpu"), {"cpu": "cpu"}, lambda s, loc: s, lambda s, loc: None],
    ids=["none", "str", "device", "dict", "callable", "callable_none"],
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
        (lambda: torch.zeros(2, dtype=torch.complex64), "complex64"),
        (lambda: torch.zeros(2, dtype=torch.complex128), "complex128"),
        (lambda: torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.quint8), "quint8"),
        (lambda: torch.zeros(2, dtype=torch.uint16), "uint16"),
    ],
    ids=["complex64", "complex128", "quint8", "uint16"],
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
    with pytest.raises(kael.TypeError, match="weights_only must be a bool, got str"):
        kael.load(_torch_saved(1), weights_only="yes")
    with pytest.raises(kael.TypeError, match="cannot pickle"):
        kael.save(lambda: 0, io.BytesIO())


def test_encoding_keyword_is_passed_to_the_unpickler():
    assert kael.load(_torch_saved({"s": "é"}), encoding="utf-8") == {"s": "é"}
