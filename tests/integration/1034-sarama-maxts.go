// 1034-sarama-maxts.go - produces with sarama (Debian's), which writes -1 as
// every batch's maxTimestamp, and looks records up by time with sarama's own
// ListOffsets.  Run by 1034-sarama-maxts.py, which builds it with the Go
// packages Debian installs (GOPATH mode, no network).
//
//	1034-sarama-maxts BOOTSTRAP TOPIC T0_MS CODEC N
//
// Sends N messages with timestamps T0 + i s in one batch (sync producer,
// acks=all), then prints "offset <target-rel-ms> <offset>" for each lookup
// target below, relative to T0.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/Shopify/sarama"
)

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 6 {
		fail("usage: %s BOOTSTRAP TOPIC T0_MS CODEC N", os.Args[0])
	}
	broker, topic, codecName := os.Args[1], os.Args[2], os.Args[4]
	t0, _ := strconv.ParseInt(os.Args[3], 10, 64)
	n, _ := strconv.Atoi(os.Args[5])
	codecs := map[string]sarama.CompressionCodec{"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP,
		"snappy": sarama.CompressionSnappy, "lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD}

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_1_0_0 // record batches v2; zstd needs 2.1
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Compression = codecs[codecName]
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Flush.Messages = n // one batch of all of them
	cfg.Producer.Flush.Frequency = time.Second
	client, err := sarama.NewClient([]string{broker}, cfg)
	if err != nil {
		fail("client: %v", err)
	}
	defer client.Close()
	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		fail("producer: %v", err)
	}
	msgs := make([]*sarama.ProducerMessage, n)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(fmt.Sprintf("v%d", i)),
			Timestamp: time.Unix(0, (t0+int64(i)*1000)*int64(time.Millisecond))}
	}
	if err := producer.SendMessages(msgs); err != nil {
		fail("send: %v", err)
	}
	for _, rel := range []int64{-5000, 0, 5500, 12000, int64(n-1) * 1000, int64(n) * 1000} {
		off, err := client.GetOffset(topic, 0, t0+rel)
		if err != nil {
			fail("GetOffset(%d): %v", rel, err)
		}
		fmt.Printf("offset %d %d\n", rel, off)
	}
}
