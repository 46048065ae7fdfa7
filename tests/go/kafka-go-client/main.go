// kafka-go-client: Gregor integration test with segmentio/kafka-go (Debian's
// 0.2): the Writer (Produce v2, message format 1, optionally compressed),
// a partition Reader (Fetch v2 from the first offset) and a group Reader
// (GroupID: JoinGroup, SyncGroup, OffsetCommit, OffsetFetch, Heartbeat).
// Every message must arrive exactly once and in production order per
// partition; a second group Reader with the same GroupID resumes from the
// committed offsets.
//
// Exit status 0 on success; on failure one line on stderr saying what.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/gzip"
	"github.com/segmentio/kafka-go/lz4"
	"github.com/segmentio/kafka-go/snappy"
)

const partitions = 3

var (
	bootstrap = flag.String("bootstrap", "", "broker address")
	topic     = flag.String("topic", "", "topic (auto-created with 3 partitions)")
	codecName = flag.String("codec", "none", "none, gzip, snappy or lz4")
	count     = flag.Int("count", 600, "messages to write")
)

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "kafka-go-client (codec %s): FAIL: %s\n", *codecName, fmt.Sprintf(format, args...))
	os.Exit(1)
}

func logf(format string, args ...interface{}) {
	fmt.Printf("kafka-go-client %s: %s\n", *codecName, fmt.Sprintf(format, args...))
}

func codec() kafka.CompressionCodec {
	switch *codecName {
	case "none":
		return nil
	case "gzip":
		return gzip.NewCompressionCodec()
	case "snappy":
		return snappy.NewCompressionCodec()
	case "lz4":
		return lz4.NewCompressionCodec()
	}
	fail("bad -codec")
	return nil
}

// seqOf parses the sequence number out of a value "msg-<seq>".
func seqOf(m kafka.Message) int {
	n, err := strconv.Atoi(strings.TrimPrefix(string(m.Value), "msg-"))
	if err != nil {
		fail("partition %d offset %d: unexpected value %q", m.Partition, m.Offset, m.Value)
	}
	return n
}

// write sends values msg-<from>..msg-<to-1>, keyed so they spread over the partitions.
func write(from, to int) {
	w := kafka.NewWriter(kafka.WriterConfig{Brokers: []string{*bootstrap}, Topic: *topic, Balancer: &kafka.Hash{},
		CompressionCodec: codec(), BatchTimeout: 5 * time.Millisecond, RequiredAcks: -1, MaxAttempts: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := from; i < to; i += 50 {
		var msgs []kafka.Message
		for j := i; j < to && j < i+50; j++ {
			msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("key-%d", j%7)),
				Value: []byte(fmt.Sprintf("msg-%06d", j))})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			fail("WriteMessages %d..: %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		fail("writer close: %v", err)
	}
	logf("wrote %d messages", to-from)
}

// tracker checks per-partition order and exactly-once delivery.
type tracker struct {
	last map[int]int   // partition -> last sequence seen
	next map[int]int64 // partition -> next offset expected
	seen map[int]bool
}

func newTracker() *tracker {
	return &tracker{last: map[int]int{}, next: map[int]int64{}, seen: map[int]bool{}}
}

func (t *tracker) add(what string, m kafka.Message) {
	seq := seqOf(m)
	if t.seen[seq] {
		fail("%s: msg-%06d delivered twice (partition %d offset %d)", what, seq, m.Partition, m.Offset)
	}
	t.seen[seq] = true
	if last, ok := t.last[m.Partition]; ok && seq <= last {
		fail("%s: partition %d out of order: msg-%06d after msg-%06d", what, m.Partition, seq, last)
	}
	t.last[m.Partition] = seq
	if next, ok := t.next[m.Partition]; ok && m.Offset != next {
		fail("%s: partition %d offset %d, want %d", what, m.Partition, m.Offset, next)
	}
	t.next[m.Partition] = m.Offset + 1
}

func (t *tracker) complete(what string, from, to int) {
	for i := from; i < to; i++ {
		if !t.seen[i] {
			fail("%s: msg-%06d never delivered", what, i)
		}
	}
	if len(t.seen) != to-from {
		fail("%s: %d messages delivered, want %d", what, len(t.seen), to-from)
	}
}

func readPartitions() {
	t := newTracker()
	for p := 0; p < partitions; p++ {
		// Read up to the partition's end offset (ListOffsets latest), asked first.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		conn, err := kafka.DialLeader(ctx, "tcp", *bootstrap, *topic, p)
		cancel()
		if err != nil {
			fail("partition %d: DialLeader: %v", p, err)
		}
		end, err := conn.ReadLastOffset()
		conn.Close()
		if err != nil {
			fail("partition %d: ReadLastOffset: %v", p, err)
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{*bootstrap}, Topic: *topic, Partition: p,
			MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond})
		t.next[p] = 0
		for next := int64(0); next < end; {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			m, err := r.ReadMessage(ctx)
			cancel()
			if err != nil {
				fail("partition reader %d at offset %d of %d: %v", p, next, end, err)
			}
			t.add("partition reader", m)
			next = m.Offset + 1
		}
		r.Close()
	}
	t.complete("partition reader", 0, *count)
	logf("partition readers read every message once, in order")
}

func readGroup(id string, from, to int) {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{*bootstrap}, Topic: *topic, GroupID: id,
		MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond, CommitInterval: 0,
		// kafka-go 0.2's Close sends no LeaveGroup: the second reader's join
		// completes when the first one's session expires (the broker runs
		// with group.min.session.timeout.ms lowered to allow 4 s).
		HeartbeatInterval: 500 * time.Millisecond, SessionTimeout: 4 * time.Second,
		RebalanceTimeout: 10 * time.Second})
	t := newTracker()
	deadline := time.Now().Add(60 * time.Second)
	for len(t.seen) < to-from {
		if time.Now().After(deadline) {
			fail("group %s: %d of %d messages after 60 s", id, len(t.seen), to-from)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		m, err := r.FetchMessage(ctx)
		cancel()
		if err != nil {
			fail("group %s: %v", id, err)
		}
		t.add("group "+id, m)
		if err := r.CommitMessages(context.Background(), m); err != nil {
			fail("group %s commit: %v", id, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	if m, err := r.FetchMessage(ctx); err == nil {
		fail("group %s: unexpected extra message %q", id, m.Value)
	}
	cancel()
	if err := r.Close(); err != nil {
		fail("group %s close: %v", id, err)
	}
	t.complete("group "+id, from, to)
	logf("group %s read %d messages once, in order", id, to-from)
}

func main() {
	flag.Parse()
	if *bootstrap == "" || *topic == "" {
		fail("usage: kafka-go-client -bootstrap host:port -topic t [-codec c]")
	}
	write(0, *count)
	readPartitions()
	id := "g-" + *topic
	readGroup(id, 0, *count)
	write(*count, *count+90)
	readGroup(id, *count, *count+90)
	logf("ok")
}
