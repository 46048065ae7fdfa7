/*
 * test_codec.c - generated protocol codec and request/response headers.
 *
 * Round-trips every API in proto_apis at every version, request and
 * response: sample -> encode -> decode (must consume every byte) -> encode
 * -> identical bytes.  Every strict prefix of those encodings must fail
 * with -EBADMSG (the decoder follows the same path until it runs out of
 * bytes).  Hand-checked byte vectors pin the wire format independently of
 * the generator: ApiVersions v3 (flexible, header v2), Metadata v1 with
 * topics=null and a DescribeLogDirs answer in v4 and v1 form.
 * proto_sample.c is generated test support, included here so the broker
 * never links it.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proto/header.h"
#include "proto_msgs.h"
#include "proto_sample.c"

#define SEEDS 3

/* Encodes, decodes, re-encodes one sampled message; false on mismatch. */
static bool codec_roundtrip(const struct proto_api *api, bool resp, int16_t v, unsigned seed)
{
	void (*sample)(void *, struct arena *, int16_t, unsigned);
	size_t size = resp ? api->resp_size : api->req_size;
	int (*decode)(struct rd *, struct arena *, int16_t, void *) = resp ? api->resp_decode : api->req_decode;
	void (*encode)(struct wr *, int16_t, const void *) = resp ? api->resp_encode : api->req_encode;
	const char *what = resp ? "response" : "request";
	struct arena a;
	struct wr w1, w2;
	struct rd r;
	void *m1, *m2;
	bool ok = true;
	int rc;

	sample = resp ? proto_samples[api - proto_apis].resp_sample : proto_samples[api - proto_apis].req_sample;
	arena_init(&a, 0);
	wr_init(&w1);
	wr_init(&w2);
	m1 = arena_alloc(&a, size);
	m2 = arena_alloc(&a, size);
	assert_non_null(m1);
	assert_non_null(m2);
	sample(m1, &a, v, seed);
	encode(&w1, v, m1);
	assert_int_equal(w1.err, 0);
	rd_init(&r, w1.buf, w1.len);
	rc = decode(&r, &a, v, m2);
	if (rc != 0 || rd_left(&r) != 0) {
		print_error("%s %s v%d seed %u: decode rc %d, %zu of %zu bytes left\n", api->name, what, v, seed, rc,
			    rd_left(&r), w1.len);
		ok = false;
		goto out;
	}
	encode(&w2, v, m2);
	assert_int_equal(w2.err, 0);
	if (w1.len != w2.len || (w1.len && memcmp(w1.buf, w2.buf, w1.len) != 0)) {
		print_error("%s %s v%d seed %u: re-encoding differs (%zu vs %zu bytes)\n", api->name, what, v, seed,
			    w1.len, w2.len);
		ok = false;
		goto out;
	}
	for (size_t n = 0; n < w1.len; n++) {
		struct arena a2;

		arena_init(&a2, 0);
		rd_init(&r, w1.buf, n);
		rc = decode(&r, &a2, v, m2);
		arena_release(&a2);
		if (rc != -EBADMSG) {
			print_error("%s %s v%d seed %u: %zu-byte prefix of %zu decoded (rc %d)\n", api->name, what, v,
				    seed, n, w1.len, rc);
			ok = false;
			break;
		}
	}
out:
	wr_release(&w1);
	wr_release(&w2);
	arena_release(&a);
	return ok;
}

static void test_roundtrip_all(void **state)
{
	int apis = 0, checks = 0, failed = 0;

	(void)state;
	for (int key = 0; key < API_COUNT; key++) {
		const struct proto_api *api = &proto_apis[key];

		if (!api->name)
			continue;
		apis++;
		assert_true(api->min <= api->max);
		for (int v = api->min; v <= api->max; v++)
			for (unsigned seed = 0; seed < SEEDS; seed++)
				for (int resp = 0; resp < 2; resp++) {
					checks++;
					if (!codec_roundtrip(api, resp, (int16_t)v, seed))
						failed++;
				}
	}
	print_message("round-tripped %d apis, %d encodings, %d failed\n", apis, checks, failed);
	assert_true(apis >= 2);
	assert_int_equal(failed, 0);
}

static void test_table(void **state)
{
	(void)state;
	assert_string_equal(proto_apis[API_ApiVersions].name, "ApiVersions");
	assert_int_equal(proto_apis[API_ApiVersions].flex_min, 3);
	assert_int_equal(proto_apis[API_Metadata].flex_min, 9);
	assert_true(proto_is_flexible(API_ApiVersions, 3));
	assert_false(proto_is_flexible(API_ApiVersions, 2));
	assert_false(proto_is_flexible(API_ApiVersions, 99)); /* unknown version */
	assert_false(proto_is_flexible(API_Metadata, 8));
	assert_false(proto_is_flexible(-1, 0));
	assert_false(proto_is_flexible(API_COUNT, 0));
	assert_false(proto_is_flexible(INT16_MAX, 0));
	for (int key = 0; key < API_COUNT; key++)
		if (!proto_apis[key].name)
			assert_false(proto_is_flexible((int16_t)key, 0));
}

/* ApiVersions v3 request: size, header v2 with client id, compact body. */
static const uint8_t apiversions_v3_req[] = {
	0x00, 0x00, 0x00, 0x15, /* size 21 */
	0x00, 0x12, 0x00, 0x03, /* api key 18, version 3 */
	0x00, 0x00, 0x00, 0x07, /* correlation id 7 */
	0x00, 0x02, 'a',  'b',  /* client id: int16 length, "ab" */
	0x00,                   /* header tagged fields: none */
	0x03, 'k',  'c',        /* ClientSoftwareName: compact "kc" */
	0x04, '1',  '.',  '0',  /* ClientSoftwareVersion: compact "1.0" */
	0x00,                   /* body tagged fields: none */
};

static void test_apiversions_v3_vector(void **state)
{
	struct req_header h;
	struct ApiVersionsRequest req;
	struct arena a;
	struct rd r;
	struct wr w;
	size_t at;

	(void)state;
	arena_init(&a, 0);
	rd_init(&r, apiversions_v3_req, sizeof(apiversions_v3_req));
	assert_int_equal(rd_i32(&r), (int32_t)sizeof(apiversions_v3_req) - 4);
	assert_int_equal(header_decode(&r, &h), 0);
	assert_int_equal(h.api_key, API_ApiVersions);
	assert_int_equal(h.api_version, 3);
	assert_int_equal(h.correlation_id, 7);
	assert_true(h.flexible);
	assert_true(kstr_eq_c(h.client_id, "ab"));
	assert_int_equal(ApiVersionsRequest_decode(&r, &a, 3, &req), 0);
	assert_int_equal(rd_left(&r), 0);
	assert_true(kstr_eq_c(req.ClientSoftwareName, "kc"));
	assert_true(kstr_eq_c(req.ClientSoftwareVersion, "1.0"));

	wr_init(&w);
	at = header_write_request(&w, API_ApiVersions, 3, 7, KSTR("ab"));
	ApiVersionsRequest_encode(&w, 3, &req);
	wr_patch_i32(&w, at, (int32_t)(wr_total(&w) - (int64_t)at - 4));
	assert_int_equal(w.err, 0);
	assert_int_equal(w.len, sizeof(apiversions_v3_req));
	assert_memory_equal(w.buf, apiversions_v3_req, sizeof(apiversions_v3_req));
	wr_release(&w);

	/* every truncation of the frame fails cleanly */
	for (size_t n = 4; n < sizeof(apiversions_v3_req); n++) {
		int rc;

		rd_init(&r, apiversions_v3_req + 4, n - 4);
		rc = header_decode(&r, &h);
		if (rc == 0)
			rc = ApiVersionsRequest_decode(&r, &a, 3, &req);
		assert_int_equal(rc, -EBADMSG);
	}
	arena_release(&a);
}

/* Metadata v1 request with topics = null (all topics), null client id. */
static const uint8_t metadata_v1_null_req[] = {
	0x00, 0x00, 0x00, 0x0e, /* size 14 */
	0x00, 0x03, 0x00, 0x01, /* api key 3, version 1 */
	0x00, 0x00, 0x00, 0x09, /* correlation id 9 */
	0xff, 0xff,             /* client id null */
	0xff, 0xff, 0xff, 0xff, /* Topics: null */
};

static void test_metadata_v1_null_vector(void **state)
{
	struct req_header h;
	struct MetadataRequest req;
	struct arena a;
	struct rd r;
	struct wr w;
	size_t at;

	(void)state;
	arena_init(&a, 0);
	rd_init(&r, metadata_v1_null_req + 4, sizeof(metadata_v1_null_req) - 4);
	assert_int_equal(header_decode(&r, &h), 0);
	assert_int_equal(h.api_key, API_Metadata);
	assert_int_equal(h.api_version, 1);
	assert_int_equal(h.correlation_id, 9);
	assert_false(h.flexible);
	assert_int_equal(h.client_id.len, -1);
	assert_int_equal(MetadataRequest_decode(&r, &a, 1, &req), 0);
	assert_int_equal(rd_left(&r), 0);
	assert_int_equal(req.Topics.n, -1);
	assert_true(req.AllowAutoTopicCreation); /* default outside v4+ */

	wr_init(&w);
	at = header_write_request(&w, API_Metadata, 1, 9, KSTR_NULL);
	MetadataRequest_encode(&w, 1, &req);
	wr_patch_i32(&w, at, (int32_t)(wr_total(&w) - (int64_t)at - 4));
	assert_int_equal(w.len, sizeof(metadata_v1_null_req));
	assert_memory_equal(w.buf, metadata_v1_null_req, sizeof(metadata_v1_null_req));
	wr_release(&w);

	/* null is not allowed in v0 */
	rd_init(&r, metadata_v1_null_req + 14, 4);
	assert_int_equal(MetadataRequest_decode(&r, &a, 0, &req), -EBADMSG);
	arena_release(&a);
}

/* DescribeLogDirs: one directory "/d" holding partition t-0 of 5 bytes, 100 bytes total, 50 usable. */
static const uint8_t logdirs_v4_resp[] = {
	0x00, 0x00, 0x00, 0x00,                         /* ThrottleTimeMs */
	0x00, 0x00,                                     /* ErrorCode (v3+) */
	0x02,                                           /* Results: compact count 1 */
	0x00, 0x00,                                     /*   ErrorCode */
	0x03, '/',  'd',                                /*   LogDir: compact "/d" */
	0x02,                                           /*   Topics: 1 */
	0x02, 't',                                      /*     Name: compact "t" */
	0x02,                                           /*     Partitions: 1 */
	0x00, 0x00, 0x00, 0x00,                         /*       PartitionIndex 0 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, /*       PartitionSize 5 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /*       OffsetLag 0 */
	0x00,                                           /*       IsFutureKey false */
	0x00,                                           /*       partition tagged fields */
	0x00,                                           /*     topic tagged fields */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x64, /*   TotalBytes 100 (v4+) */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x32, /*   UsableBytes 50 (v4+) */
	0x00,                                           /*   result tagged fields */
	0x00,                                           /* body tagged fields */
};

/* The same answer in v1 (non-flexible: no top-level ErrorCode, no sizes). */
static const uint8_t logdirs_v1_resp[] = {
	0x00, 0x00, 0x00, 0x00,                         /* ThrottleTimeMs */
	0x00, 0x00, 0x00, 0x01,                         /* Results: 1 */
	0x00, 0x00,                                     /*   ErrorCode */
	0x00, 0x02, '/',  'd',                          /*   LogDir "/d" */
	0x00, 0x00, 0x00, 0x01,                         /*   Topics: 1 */
	0x00, 0x01, 't',                                /*     Name "t" */
	0x00, 0x00, 0x00, 0x01,                         /*     Partitions: 1 */
	0x00, 0x00, 0x00, 0x00,                         /*       PartitionIndex 0 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, /*       PartitionSize 5 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /*       OffsetLag 0 */
	0x00,                                           /*       IsFutureKey false */
};

/* Encodes m at version v and compares with want. */
static void logdirs_check_encoding(const struct DescribeLogDirsResponse *m, int16_t v, const uint8_t *want, size_t len)
{
	struct wr w;

	wr_init(&w);
	DescribeLogDirsResponse_encode(&w, v, m);
	assert_int_equal(w.err, 0);
	assert_int_equal(w.len, len);
	assert_memory_equal(w.buf, want, len);
	wr_release(&w);
}

static void test_describe_log_dirs_vectors(void **state)
{
	struct DescribeLogDirsResponse m;
	const struct DescribeLogDirsResult *res;
	struct arena a;
	struct rd r;

	(void)state;
	arena_init(&a, 0);
	rd_init(&r, logdirs_v4_resp, sizeof(logdirs_v4_resp));
	assert_int_equal(DescribeLogDirsResponse_decode(&r, &a, 4, &m), 0);
	assert_int_equal(rd_left(&r), 0);
	assert_int_equal(m.Results.n, 1);
	res = &m.Results.v[0];
	assert_true(kstr_eq_c(res->LogDir, "/d"));
	assert_int_equal(res->Topics.n, 1);
	assert_true(kstr_eq_c(res->Topics.v[0].Name, "t"));
	assert_int_equal(res->Topics.v[0].Partitions.n, 1);
	assert_int_equal(res->Topics.v[0].Partitions.v[0].PartitionSize, 5);
	assert_int_equal(res->TotalBytes, 100);
	assert_int_equal(res->UsableBytes, 50);
	logdirs_check_encoding(&m, 4, logdirs_v4_resp, sizeof(logdirs_v4_resp));
	logdirs_check_encoding(&m, 1, logdirs_v1_resp, sizeof(logdirs_v1_resp));

	/* read in v1 form, the v4-only sizes are their defaults */
	rd_init(&r, logdirs_v1_resp, sizeof(logdirs_v1_resp));
	assert_int_equal(DescribeLogDirsResponse_decode(&r, &a, 1, &m), 0);
	assert_int_equal(rd_left(&r), 0);
	assert_int_equal(m.Results.v[0].TotalBytes, -1);
	assert_int_equal(m.Results.v[0].UsableBytes, -1);
	arena_release(&a);
}

static void test_huge_array_count(void **state)
{
	static const uint8_t meta[] = { 0x7f, 0xff, 0xff, 0xff, 0x00, 0x01, 'x' };
	static const uint8_t meta_neg[] = { 0x80, 0x00, 0x00, 0x00 };
	/* ApiVersions v3 response: ErrorCode 0, ApiKeys compact count 2^32-1 - 1 */
	static const uint8_t av[] = { 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00 };
	/* uvarint count 2^31 + 1 would be count 2^31: past INT32_MAX */
	static const uint8_t av2[] = { 0x00, 0x00, 0x81, 0x80, 0x80, 0x80, 0x08 };
	struct MetadataRequest req;
	struct ApiVersionsResponse resp;
	struct arena a;
	struct rd r;

	(void)state;
	arena_init(&a, 0);
	rd_init(&r, meta, sizeof(meta));
	assert_int_equal(MetadataRequest_decode(&r, &a, 1, &req), -EBADMSG);
	rd_init(&r, meta_neg, sizeof(meta_neg));
	assert_int_equal(MetadataRequest_decode(&r, &a, 1, &req), -EBADMSG);
	rd_init(&r, av, sizeof(av));
	assert_int_equal(ApiVersionsResponse_decode(&r, &a, 3, &resp), -EBADMSG);
	rd_init(&r, av2, sizeof(av2));
	assert_int_equal(ApiVersionsResponse_decode(&r, &a, 3, &resp), -EBADMSG);
	assert_true(a.bytes < 1 << 20); /* nothing big was allocated */
	arena_release(&a);
}

static void test_unknown_tags_skipped(void **state)
{
	/* ApiVersions v3 request, empty names, one unknown tag (5) of 3 bytes */
	static const uint8_t in[] = { 0x01, 0x01, 0x01, 0x05, 0x03, 0xaa, 0xbb, 0xcc };
	/* tag 1 (FinalizedFeaturesEpoch) in a response with a wrong size */
	static const uint8_t bad[] = { 0, 0, 0x01, 0, 0, 0, 0, 0x01, 0x01, 0x04, 0, 0, 0, 1 };
	struct ApiVersionsRequest req;
	struct ApiVersionsResponse resp;
	struct arena a;
	struct rd r;

	(void)state;
	arena_init(&a, 0);
	rd_init(&r, in, sizeof(in));
	assert_int_equal(ApiVersionsRequest_decode(&r, &a, 3, &req), 0);
	assert_int_equal(rd_left(&r), 0);
	assert_int_equal(req.ClientSoftwareName.len, 0);
	rd_init(&r, bad, sizeof(bad));
	assert_int_equal(ApiVersionsResponse_decode(&r, &a, 3, &resp), -EBADMSG);
	arena_release(&a);
}

static void test_tagged_defaults_not_written(void **state)
{
	static const uint8_t want[] = { 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00 };
	struct ApiVersionsResponse resp;
	struct wr w;

	(void)state;
	ApiVersionsResponse_init(&resp);
	assert_int_equal(resp.FinalizedFeaturesEpoch, -1);
	wr_init(&w);
	ApiVersionsResponse_encode(&w, 3, &resp);
	assert_int_equal(w.len, sizeof(want));
	assert_memory_equal(w.buf, want, sizeof(want));
	wr_release(&w);
}

static void test_response_header(void **state)
{
	struct wr w;
	size_t at;
	int flex_key = -1;

	(void)state;
	wr_init(&w);
	at = header_write_response(&w, API_ApiVersions, 3, 0x01020304);
	assert_int_equal(at, 0);
	assert_int_equal(w.len, 8); /* always header v0 */
	wr_patch_i32(&w, at, (int32_t)(w.len - 4));
	assert_memory_equal(w.buf, ((const uint8_t[]){ 0, 0, 0, 4, 1, 2, 3, 4 }), 8);
	wr_release(&w);

	wr_init(&w);
	header_write_response(&w, API_Metadata, 8, 5);
	assert_int_equal(w.len, 8);
	wr_release(&w);

	for (int key = 0; key < API_COUNT && flex_key < 0; key++)
		if (key != API_ApiVersions && proto_apis[key].name && proto_apis[key].flex_min <= proto_apis[key].max)
			flex_key = key;
	if (flex_key >= 0) {
		wr_init(&w);
		header_write_response(&w, (int16_t)flex_key, proto_apis[flex_key].max, 5);
		assert_int_equal(w.len, 9);
		assert_int_equal(w.buf[8], 0x00);
		wr_release(&w);
	}
}

static void test_records_file(void **state)
{
	/* a file-backed records field: length prefix in memory, bytes as a slice */
	static const uint8_t want[] = {
		0xff, 0xff,             /* TransactionalId null */
		0x00, 0x01,             /* Acks 1 */
		0x00, 0x00, 0x03, 0xe8, /* TimeoutMs 1000 */
		0x00, 0x00, 0x00, 0x01, /* TopicData: 1 */
		0x00, 0x01, 't',        /* Name "t" */
		0x00, 0x00, 0x00, 0x01, /* PartitionData: 1 */
		0x00, 0x00, 0x00, 0x00, /* Index 0 */
		0x00, 0x00, 0x01, 0x2c, /* Records: 300 bytes, from the file */
	};
	struct ProduceRequest req;
	struct ProduceRequestTopic topic;
	struct ProduceRequestPartition part;
	struct fdref *ref = fdref_new(open("/dev/null", O_RDONLY));
	struct wr w;

	(void)state;
	assert_non_null(ref);
	ProduceRequest_init(&req);
	ProduceRequestTopic_init(&topic);
	ProduceRequestPartition_init(&part);
	req.Acks = 1;
	req.TimeoutMs = 1000;
	req.TopicData.v = &topic;
	req.TopicData.n = 1;
	topic.Name = KSTR("t");
	topic.PartitionData.v = &part;
	topic.PartitionData.n = 1;
	part.Records.p = (const uint8_t *)"ignored";
	part.Records.len = 7;
	part.Records.file = (struct fslice){ ref, 10, 300 };
	wr_init(&w);
	ProduceRequest_encode(&w, 3, &req);
	assert_int_equal(w.err, 0);
	assert_int_equal(w.len, sizeof(want));
	assert_memory_equal(w.buf, want, sizeof(want));
	assert_int_equal(w.nfiles, 1);
	assert_int_equal(w.files[0].at, sizeof(want));
	assert_int_equal(w.files[0].s.pos, 10);
	assert_int_equal(wr_total(&w), (int64_t)sizeof(want) + 300);
	assert_int_equal(ref->refs, 2);
	wr_release(&w);
	assert_int_equal(ref->refs, 1);
	fdref_put(ref);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_roundtrip_all),
		cmocka_unit_test(test_apiversions_v3_vector),
		cmocka_unit_test(test_metadata_v1_null_vector),
		cmocka_unit_test(test_describe_log_dirs_vectors),
		cmocka_unit_test(test_huge_array_count),
		cmocka_unit_test(test_unknown_tags_skipped),
		cmocka_unit_test(test_tagged_defaults_not_written),
		cmocka_unit_test(test_response_header),
		cmocka_unit_test(test_records_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
