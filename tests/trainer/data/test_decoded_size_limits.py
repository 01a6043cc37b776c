"""Every format is held to the same limits on *decoded* size (per cell, per row, per file), checked before
the data is materialised: decompression bombs are refused by the one reader that uploads, previews,
benchmark files and workers use (trainer/data/reader.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trainer.data.files import load_file_samples
from trainer.data.limits import FileLimits
from trainer.data.reader import open_parquet
from trainer.data.row_check import check_data_file, read_data_file
from trainer.errors import DataError

CODECS = ["zstd", "gzip", "snappy", "brotli", "lz4"]


def parquet_bomb(path: Path, codec: str, mb: int = 8) -> Path:
    """One row whose 'question' cell decodes to ``mb`` MiB: a few KB on disk with most codecs."""
    pq.write_table(pa.table({"question": ["x" * (mb << 20)], "answer": ["2"]}), path, compression=codec)
    return path


@pytest.mark.parametrize("codec", CODECS)
def test_a_parquet_bomb_is_refused_from_its_footer_alone_with_every_codec(tmp_path: Path, codec: str) -> None:
    path = parquet_bomb(tmp_path / f"bomb-{codec}.parquet", codec)
    assert path.stat().st_size < 1 << 20
    with pytest.raises(
        DataError, match=r"row 1, column 'question': 8\.0 MB decoded .*the limit is 1 MiB per cell"
    ):
        open_parquet(path)  # reads the footer only: no data page is decompressed


def test_the_workers_loader_refuses_a_parquet_bomb(tmp_path: Path) -> None:
    path = parquet_bomb(tmp_path / "bomb.parquet", "zstd")
    with pytest.raises(DataError, match="the limit is 1 MiB per cell"):
        load_file_samples(path, prompt_field="question")


def test_the_benchmark_row_check_refuses_a_parquet_bomb(tmp_path: Path) -> None:
    path = parquet_bomb(tmp_path / "bomb.parquet", "brotli")
    with pytest.raises(DataError, match="the limit is 1 MiB per cell"):
        check_data_file(path, prompt_field="question")


def test_a_huge_cell_among_many_rows_is_refused_at_its_row_while_reading_in_batches(tmp_path: Path) -> None:
    questions = ["1+1="] * 1000
    questions[499] = "y" * (2 << 20)  # the footer's average per cell stays small: the batch check finds it
    questions[510] = "z" * (3 << 20)  # longer, in the same batch: the first cell over the limit is named
    path = tmp_path / "one.parquet"
    pq.write_table(pa.table({"question": questions, "answer": ["2"] * 1000}), path, compression="zstd")
    open_parquet(path).close()
    with pytest.raises(
        DataError, match=r"row 500, column 'question': 2 MiB decoded, the limit is 1 MiB per cell"
    ):
        load_file_samples(path, prompt_field="question")


def test_a_parquet_row_group_over_the_limit_is_refused_with_a_row_group_size_that_fits(
    tmp_path: Path,
) -> None:
    path = tmp_path / "wide_groups.parquet"
    pq.write_table(
        pa.table({"question": [f"{i}+{i}=" + "z" * 500 for i in range(4000)], "answer": ["0"] * 4000}),
        path,
        compression="zstd",
    )
    with pytest.raises(DataError, match=r"row group 1: .* per row group .*row_group_size=\d"):
        open_parquet(path, FileLimits(max_row_group_bytes=1 << 20))


def test_a_parquet_file_that_decodes_past_the_file_limit_is_refused_from_its_footer(tmp_path: Path) -> None:
    path = tmp_path / "big.parquet"
    questions = [f"{i}+1=" + "q" * 1000 for i in range(3000)]
    pq.write_table(
        pa.table({"question": questions, "answer": ["a"] * 3000}),
        path,
        compression="zstd",
        row_group_size=500,
    )
    assert path.stat().st_size < 100_000
    with pytest.raises(
        DataError, match=r"more than 1 MiB of data once decoded .* the limit for one data file"
    ):
        open_parquet(path, FileLimits(max_decoded_bytes=1 << 20))


def test_a_jsonl_cell_over_the_cell_limit_names_its_line_column_and_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    path.write_text(
        json.dumps({"question": "1+1=", "answer": "2"}) + "\n" + json.dumps({"question": "q" * 300}) + "\n"
    )
    with pytest.raises(
        DataError, match=r"line 2, column 'question': 300 bytes decoded, the limit is 200 bytes per cell"
    ):
        load_file_samples(path, prompt_field="question", limits=FileLimits(max_cell_bytes=200))


def test_cells_are_measured_in_utf8_bytes_once_decoded(tmp_path: Path) -> None:
    path = tmp_path / "wide_chars.jsonl"
    path.write_text(json.dumps({"question": "é" * 150}, ensure_ascii=True) + "\n")  # 900 escaped characters
    with pytest.raises(DataError, match="300 bytes decoded, the limit is 200 bytes per cell"):
        read_data_file(path, limits=FileLimits(max_cell_bytes=200))


def test_a_row_over_the_row_limit_is_refused_in_csv(tmp_path: Path) -> None:
    path = tmp_path / "row.csv"
    path.write_text("question,answer,note\n" + ",".join(["x" * 150] * 3) + "\n")
    with pytest.raises(
        DataError, match=r"row 1 \(line 2\): 450 bytes decoded, the limit is 400 bytes per row"
    ):
        load_file_samples(path, prompt_field="question", limits=FileLimits(max_row_bytes=400))


def test_the_decoded_total_of_a_jsonl_file_is_bounded_while_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    path.write_text(
        "".join(json.dumps({"question": f"{i}+1=" + "w" * 100, "answer": "1"}) + "\n" for i in range(100))
    )
    with pytest.raises(DataError, match=r"more than 4,096 bytes of data once decoded \(passed at line \d+\)"):
        read_data_file(path, limits=FileLimits(max_decoded_bytes=4096, max_bytes=1 << 20))


def test_a_csv_cell_past_the_csv_field_limit_is_refused_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "cell.csv"
    path.write_text('question,answer\n"' + ("v" * 999 + "\n") * 200 + '",2\n')
    with pytest.raises(DataError, match=r"cell\.csv, line \d+: a cell longer than 131,072 characters"):
        load_file_samples(path, prompt_field="question")


def test_a_json_document_that_is_one_giant_string_is_refused_after_reading_the_record_limit(
    tmp_path: Path,
) -> None:
    path = tmp_path / "giant.json"
    path.write_text('"' + "s" * 3000 + '"')
    with pytest.raises(
        DataError, match="the document: longer than 1,000 characters, the limit for one JSON record"
    ):
        load_file_samples(path, limits=FileLimits(max_line_chars=1000))


def test_a_giant_element_of_a_json_array_is_refused_naming_the_record(tmp_path: Path) -> None:
    path = tmp_path / "array.json"
    path.write_text(json.dumps([{"prompt": "1+1=", "answer": "2"}, {"prompt": "p" * 5000, "answer": "2"}]))
    with pytest.raises(DataError, match="record 2: longer than 1,000 characters"):
        check_data_file(path, limits=FileLimits(max_line_chars=1000))


def test_a_deeply_nested_json_array_element_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('[{"prompt": "p", "answer": ' + "[" * 5000 + "]" * 5000 + "}]")
    with pytest.raises(DataError, match="record 1: JSON nests more than 64 levels deep"):
        load_file_samples(path)


def test_a_json_array_is_streamed_keeping_values_as_written_across_read_chunks(tmp_path: Path) -> None:
    rows = [{"prompt": f"{i}+{i}=" + " " * 3000, "answer": i * 2, "score": 0.5} for i in range(200)]
    path = tmp_path / "stream.json"
    path.write_text(json.dumps(rows, indent=1))  # ~600 KB: many 64 KiB chunks, records cut at chunk ends
    samples = load_file_samples(path)
    assert [s.answer for s in samples] == [str(i * 2) for i in range(200)]
    assert samples[-1].meta == {"score": 0.5}


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def test_a_parquet_footer_that_understates_a_chunk_is_caught_by_its_page_headers(tmp_path: Path) -> None:
    path = parquet_bomb(tmp_path / "honest.parquet", "zstd")
    data = path.read_bytes()
    true_size = pq.ParquetFile(path).metadata.row_group(0).column(0).total_uncompressed_size
    footer_start = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    honest = _varint(true_size * 2)  # Thrift compact: a zigzag varint
    small = bytearray(_varint(200 * 2))  # the same length, padded with continuation bytes, says 200 bytes
    while len(small) < len(honest):
        small[-1] |= 0x80
        small.append(0)
    lying = tmp_path / "lying.parquet"
    lying.write_bytes(data[:footer_start] + data[footer_start:-8].replace(honest, bytes(small)) + data[-8:])
    assert pq.ParquetFile(lying).metadata.row_group(0).column(0).total_uncompressed_size == 200
    with pytest.raises(DataError, match=r"row 1, column 'question': 8\.0 MB decoded"):
        open_parquet(lying)


@pytest.mark.parametrize("codec", CODECS)
def test_the_page_headers_add_up_to_the_footers_sizes(tmp_path: Path, codec: str) -> None:
    from trainer.data.parquet_pages import page_sizes

    path = tmp_path / f"{codec}.parquet"
    table = pa.table(
        {
            "question": [f"{i}+{i}=" for i in range(5000)],
            "answer": [str(i % 7) for i in range(5000)],
            "score": [i / 3 for i in range(5000)],
        }
    )
    pq.write_table(table, path, compression=codec, row_group_size=2000, data_page_size=4096)
    meta = pq.ParquetFile(path).metadata
    with path.open("rb") as f:
        for g in range(meta.num_row_groups):
            for c in range(meta.num_columns):
                chunk = meta.row_group(g).column(c)
                start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
                pages = list(page_sizes(f, start, chunk.total_compressed_size))
                assert len(pages) >= 2
                assert sum(u for u, _ in pages) <= chunk.total_uncompressed_size
                assert sum(c for _, c in pages) < chunk.total_compressed_size
