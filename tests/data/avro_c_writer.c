/* Writes an Avro object container file with the Avro C library (libavro), as an independent
 * writer for RSL's Avro reader tests and as the peer of bench/quality_vs_duckdb.sh.
 *
 * usage: avro_c_writer OUT CODEC ROWS          write the rows write_avro.py writes (less tags)
 *        avro_c_writer --bench OUT CODEC ROWS  the benchmark's transaction rows
 *        avro_c_writer --decode FILE           decode every record, print the count
 */
#include <avro.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char kTestSchema[] =
    "{\"type\":\"record\",\"name\":\"transaction\",\"fields\":["
    "{\"name\":\"tx_id\",\"type\":\"string\"},"
    "{\"name\":\"user_id\",\"type\":\"long\"},"
    "{\"name\":\"amount\",\"type\":[\"null\",\"double\"]},"
    "{\"name\":\"merchant\",\"type\":{\"type\":\"enum\",\"name\":\"merchant\",\"symbols\":[\"m0\",\"m1\",\"m2\",\"m3\",\"m4\"]}},"
    "{\"name\":\"ts\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-micros\"}},"
    "{\"name\":\"is_fraud\",\"type\":\"boolean\"}]}";

static const char kBenchSchema[] =
    "{\"type\":\"record\",\"name\":\"transaction\",\"fields\":["
    "{\"name\":\"tx_id\",\"type\":\"string\"},"
    "{\"name\":\"user_id\",\"type\":\"string\"},"
    "{\"name\":\"amount\",\"type\":[\"null\",\"double\"]},"
    "{\"name\":\"merchant\",\"type\":\"string\"},"
    "{\"name\":\"timestamp\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-micros\"}},"
    "{\"name\":\"is_fraud\",\"type\":\"boolean\"}]}";

static int fail(const char* what) {
  fprintf(stderr, "avro_c_writer: %s: %s\n", what, avro_strerror());
  return 1;
}

/* Deterministic pseudo-random numbers (splitmix64) so the benchmark data is reproducible. */
static unsigned long long rng_state = 42;
static unsigned long long next_rand(void) {
  unsigned long long z = (rng_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static int write_file(const char* out, const char* codec, long rows, int bench) {
  avro_schema_t schema;
  const char* text = bench ? kBenchSchema : kTestSchema;
  if (avro_schema_from_json_length(text, strlen(text), &schema)) return fail("schema");
  avro_file_writer_t writer;
  remove(out);
  if (avro_file_writer_create_with_codec(out, schema, &writer, codec, 64 * 1024)) return fail("create");
  avro_value_iface_t* iface = avro_generic_class_from_schema(schema);
  avro_value_t rec, field, branch;
  avro_generic_value_new(iface, &rec);
  char buf[64];
  for (long i = 0; i < rows; i++) {
    avro_value_reset(&rec);
    if (bench) {
      /* tx_id unique; user_id ~1M distinct; amount null 1 in 10,000; merchant of 1,000. */
      unsigned long long r = next_rand();
      snprintf(buf, sizeof buf, "tx%012ld", i);
      avro_value_get_by_index(&rec, 0, &field, NULL);
      avro_value_set_string(&field, buf);
      snprintf(buf, sizeof buf, "u%07llu", r % 1000000);
      avro_value_get_by_index(&rec, 1, &field, NULL);
      avro_value_set_string(&field, buf);
      avro_value_get_by_index(&rec, 2, &field, NULL);
      if ((r >> 20) % 10000 == 0) {
        avro_value_set_branch(&field, 0, &branch);
        avro_value_set_null(&branch);
      } else {
        avro_value_set_branch(&field, 1, &branch);
        avro_value_set_double(&branch, (double)((r >> 34) % 100000) / 100.0);
      }
      snprintf(buf, sizeof buf, "merchant_%03llu", (r >> 40) % 1000);
      avro_value_get_by_index(&rec, 3, &field, NULL);
      avro_value_set_string(&field, buf);
      avro_value_get_by_index(&rec, 4, &field, NULL);
      avro_value_set_long(&field, 1718409600000000LL + i * 8640LL);
      avro_value_get_by_index(&rec, 5, &field, NULL);
      avro_value_set_boolean(&field, (r >> 50) % 100 == 0);
    } else {
      snprintf(buf, sizeof buf, "tx-%ld", i == 10 ? 3L : i);
      avro_value_get_by_index(&rec, 0, &field, NULL);
      avro_value_set_string(&field, buf);
      avro_value_get_by_index(&rec, 1, &field, NULL);
      avro_value_set_long(&field, i % 1000);
      avro_value_get_by_index(&rec, 2, &field, NULL);
      if (i % 1000 == 7) {
        avro_value_set_branch(&field, 0, &branch);
        avro_value_set_null(&branch);
      } else {
        avro_value_set_branch(&field, 1, &branch);
        avro_value_set_double(&branch, i * 0.5);
      }
      avro_value_get_by_index(&rec, 3, &field, NULL);
      avro_value_set_enum(&field, (int)(i % 5));
      avro_value_get_by_index(&rec, 4, &field, NULL);
      avro_value_set_long(&field, 1718445600000000LL + i);
      avro_value_get_by_index(&rec, 5, &field, NULL);
      avro_value_set_boolean(&field, i % 97 == 0);
    }
    if (avro_file_writer_append_value(writer, &rec)) return fail("append");
  }
  avro_file_writer_close(writer);
  avro_value_decref(&rec);
  avro_value_iface_decref(iface);
  avro_schema_decref(schema);
  return 0;
}

/* The benchmark's peer: decode every record of FILE in a plain loop, computing nothing. */
static int decode_file(const char* path) {
  avro_file_reader_t reader;
  if (avro_file_reader(path, &reader)) return fail("open");
  avro_schema_t schema = avro_file_reader_get_writer_schema(reader);
  avro_value_iface_t* iface = avro_generic_class_from_schema(schema);
  avro_value_t rec;
  avro_generic_value_new(iface, &rec);
  long n = 0;
  while (avro_file_reader_read_value(reader, &rec) == 0) n++;
  printf("%ld\n", n);
  avro_value_decref(&rec);
  avro_value_iface_decref(iface);
  avro_file_reader_close(reader);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "--decode") == 0) return decode_file(argv[2]);
  if (argc == 5 && strcmp(argv[1], "--bench") == 0) return write_file(argv[2], argv[3], atol(argv[4]), 1);
  if (argc == 4) return write_file(argv[1], argv[2], atol(argv[3]), 0);
  fprintf(stderr, "usage: avro_c_writer [--bench] OUT CODEC ROWS | --decode FILE\n");
  return 2;
}
