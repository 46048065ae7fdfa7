// sarama-client: Gregor integration test with Shopify/sarama (Debian's 1.22).
//
// One run exercises one sarama Version and one codec against the broker
// given by -bootstrap: sync, async and (from 0.11) idempotent producers,
// a partition consumer from the oldest offset, GetOffset oldest/newest,
// offsets committed and fetched back with the OffsetManager, and, where the Version allows, a consumer group and ClusterAdmin
// create/describe/delete.  Every message must arrive exactly once and in
// production order per partition.  The version decides the wire protocol:
// sarama's default 0.8.2.0 speaks Produce v0 (message format 0), Fetch v0,
// ListOffsets v0, Metadata v0 and OffsetCommit v1; 0.10.0.0 Produce v2 /
// Fetch v2 (format 1); the highest, 2.2.0, Produce v3 (batches v2), Fetch v4.
//
// Exit status 0 on success; on failure one line on stderr saying what.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Shopify/sarama"
)

const partitions = 3

var (
	bootstrap = flag.String("bootstrap", "", "broker address")
	version   = flag.String("version", "default", "sarama Version: default, max or a.b.c.d")
	codecName = flag.String("codec", "none", "none, gzip, snappy, lz4 or zstd")
	topic     = flag.String("topic", "", "topic (auto-created with 3 partitions unless -admin)")
	count     = flag.Int("count", 200, "messages per producer")
	group     = flag.Bool("group", false, "also consume with a consumer group")
	admin     = flag.Bool("admin", false, "create the topic with ClusterAdmin, describe it, delete it at the end")
	wantErr   = flag.String("want-produce-error", "", "expect every produce to fail with this error text")
)

// saramaLog keeps sarama's own log lines; they are printed when the test fails.
type lockedBuffer struct {
	sync.Mutex
	b bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.Lock()
	defer l.Unlock()
	return l.b.Write(p)
}

var saramaLog lockedBuffer

func fail(format string, args ...interface{}) {
	saramaLog.Lock()
	lines := strings.Split(strings.TrimSpace(saramaLog.b.String()), "\n")
	saramaLog.Unlock()
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	fmt.Fprintf(os.Stderr, "--- last lines of sarama's log ---\n%s\n---\n", strings.Join(lines, "\n"))
	fmt.Fprintf(os.Stderr, "sarama-client (version %s, codec %s): FAIL: %s\n", *version, *codecName,
		fmt.Sprintf(format, args...))
	os.Exit(1)
}

func logf(format string, args ...interface{}) {
	fmt.Printf("sarama-client %s/%s: %s\n", *version, *codecName, fmt.Sprintf(format, args...))
}

func config() *sarama.Config {
	c := sarama.NewConfig()
	switch *version {
	case "default":
	case "max":
		c.Version = sarama.MaxVersion
	default:
		v, err := sarama.ParseKafkaVersion(*version)
		if err != nil {
			fail("bad -version: %v", err)
		}
		c.Version = v
	}
	codecs := map[string]sarama.CompressionCodec{"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP,
		"snappy": sarama.CompressionSnappy, "lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD}
	codec, ok := codecs[*codecName]
	if !ok {
		fail("bad -codec")
	}
	c.ClientID = "gregor-itest-sarama"
	c.Producer.Compression = codec
	c.Producer.Return.Successes = true
	c.Producer.RequiredAcks = sarama.WaitForAll // answered once synced: the high watermark covers it
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Producer.Retry.Max = 0
	c.Producer.Timeout = 10 * time.Second
	c.Metadata.Retry.Max = 20
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	c.Consumer.Return.Errors = true
	c.Consumer.MaxWaitTime = 100 * time.Millisecond
	// The OffsetManager releases a closed partition manager at its next
	// commit tick: at the default 1 s each Close waits up to a second.
	c.Consumer.Offsets.CommitInterval = 100 * time.Millisecond
	c.Net.DialTimeout = 5 * time.Second
	c.Net.ReadTimeout = 15 * time.Second
	return c
}

// sent[p] is what was acknowledged for partition p, in offset order.
type sent struct {
	sync.Mutex
	byPart [partitions][]string
	base   [partitions]int64 // offset of byPart[p][0]
}

func (s *sent) add(p int32, offset int64, value string) {
	s.Lock()
	defer s.Unlock()
	want := s.base[p] + int64(len(s.byPart[p]))
	if offset != want {
		fail("partition %d: value %q acknowledged at offset %d, expected %d (dense, in order)", p, value, offset,
			want)
	}
	s.byPart[p] = append(s.byPart[p], value)
}

func msg(prefix string, i int) *sarama.ProducerMessage {
	return &sarama.ProducerMessage{Topic: *topic, Partition: int32(i % partitions),
		Key: sarama.StringEncoder(fmt.Sprintf("key-%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("%s-%06d", prefix, i))}
}

func produceSync(c *sarama.Config, s *sent) {
	p, err := sarama.NewSyncProducer([]string{*bootstrap}, c)
	if err != nil {
		fail("NewSyncProducer: %v", err)
	}
	defer p.Close()
	for i := 0; i < *count; i++ {
		m := msg("sync", i)
		part, offset, err := p.SendMessage(m)
		if *wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), *wantErr) {
				fail("sync produce: got error %v, want %q", err, *wantErr)
			}
			logf("sync produce refused as expected: %v", err)
			return
		}
		if err != nil {
			fail("sync produce %d: %v", i, err)
		}
		s.add(part, offset, string(m.Value.(sarama.StringEncoder)))
	}
}

func produceAsync(c *sarama.Config, prefix string, s *sent) {
	// sarama 1.22 may hand a batch to a broker connection it has not opened
	// yet ("broker not connected", nothing sent); its retries keep the order.
	c.Producer.Retry.Max = 3
	c.Producer.Retry.Backoff = 50 * time.Millisecond
	c.Producer.Flush.Messages = 20
	c.Producer.Flush.Frequency = 5 * time.Millisecond
	p, err := sarama.NewAsyncProducer([]string{*bootstrap}, c)
	if err != nil {
		fail("NewAsyncProducer (%s): %v", prefix, err)
	}
	done := make(chan struct{})
	var errs []string
	go func() {
		defer close(done)
		for i := 0; i < *count; i++ {
			select {
			case m := <-p.Successes():
				s.add(m.Partition, m.Offset, string(m.Value.(sarama.StringEncoder)))
			case e := <-p.Errors():
				errs = append(errs, fmt.Sprintf("%s: %v", e.Msg.Value, e.Err))
			case <-time.After(30 * time.Second):
				fail("%s produce: no acknowledgement after 30 s (%d of %d)", prefix, i, *count)
			}
		}
	}()
	// One partition at a time keeps the acknowledgement order the send order.
	for part := 0; part < partitions; part++ {
		for i := part; i < *count; i += partitions {
			p.Input() <- msg(prefix, i)
		}
	}
	<-done
	if len(errs) > 0 {
		fail("%s produce: %d errors: %v", prefix, len(errs), errs)
	}
	if err := p.Close(); err != nil {
		fail("%s producer close: %v", prefix, err)
	}
}

func checkOffsets(client sarama.Client, s *sent) {
	for p := int32(0); p < partitions; p++ {
		oldest, err := client.GetOffset(*topic, p, sarama.OffsetOldest)
		if err != nil || oldest != 0 {
			fail("GetOffset(%d, oldest) = %d, %v; want 0", p, oldest, err)
		}
		newest, err := client.GetOffset(*topic, p, sarama.OffsetNewest)
		want := s.base[p] + int64(len(s.byPart[p]))
		if err != nil || newest != want {
			fail("GetOffset(%d, newest) = %d, %v; want %d", p, newest, err, want)
		}
	}
	logf("GetOffset oldest/newest right on %d partitions", partitions)
}

func consumePartitions(client sarama.Client, s *sent) {
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		fail("NewConsumer: %v", err)
	}
	defer consumer.Close()
	for p := int32(0); p < partitions; p++ {
		pc, err := consumer.ConsumePartition(*topic, p, sarama.OffsetOldest)
		if err != nil {
			fail("ConsumePartition(%d): %v", p, err)
		}
		for i, want := range s.byPart[p] {
			select {
			case m := <-pc.Messages():
				if m.Offset != s.base[p]+int64(i) || string(m.Value) != want {
					fail("partition %d: got offset %d value %q, want offset %d value %q", p, m.Offset,
						m.Value, s.base[p]+int64(i), want)
				}
			case e := <-pc.Errors():
				fail("partition %d consume: %v", p, e.Err)
			case <-time.After(20 * time.Second):
				fail("partition %d: %d of %d messages after 20 s", p, i, len(s.byPart[p]))
			}
		}
		select {
		case m := <-pc.Messages():
			fail("partition %d: unexpected extra message at offset %d", p, m.Offset)
		case <-time.After(300 * time.Millisecond):
		}
		pc.Close()
	}
	logf("partition consumer read every message once, in order")
}

// commitOffsets stores an offset per partition through sarama's OffsetManager
// (OffsetCommit v1 at every Version unless Retention is set, FindCoordinator
// v0, OffsetFetch v1) outside any group generation, and reads them back.
func commitOffsets(client sarama.Client, s *sent) {
	id := "om-" + *topic
	for round := 0; round < 2; round++ {
		om, err := sarama.NewOffsetManagerFromClient(id, client)
		if err != nil {
			fail("NewOffsetManager: %v", err)
		}
		for p := int32(0); p < partitions; p++ {
			pom, err := om.ManagePartition(*topic, p)
			if err != nil {
				fail("ManagePartition(%d): %v", p, err)
			}
			want := s.base[p] + int64(len(s.byPart[p])) - int64(p)
			if round == 0 {
				pom.MarkOffset(want, fmt.Sprintf("meta-%d", p))
			} else if off, meta := pom.NextOffset(); off != want || meta != fmt.Sprintf("meta-%d", p) {
				fail("partition %d: committed offset %d %q, want %d %q", p, off, meta, want,
					fmt.Sprintf("meta-%d", p))
			}
			if err := pom.Close(); err != nil {
				fail("partition offset manager %d: %v", p, err)
			}
		}
		if err := om.Close(); err != nil {
			fail("offset manager close: %v", err)
		}
	}
	logf("OffsetManager committed and fetched back %d offsets", partitions)
}

// groupHandler records what a consumer group session delivers.
type groupHandler struct {
	mu   sync.Mutex
	got  [partitions][]*sarama.ConsumerMessage
	want int
	done chan struct{}
}

func (h *groupHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *groupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *groupHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		h.mu.Lock()
		h.got[m.Partition] = append(h.got[m.Partition], m)
		n := 0
		for p := range h.got {
			n += len(h.got[p])
		}
		h.mu.Unlock()
		sess.MarkMessage(m, "")
		if n == h.want {
			close(h.done)
		}
	}
	return nil
}

// consumeGroup reads from the committed offsets (oldest the first time) and expects exactly want[p].
func consumeGroup(c *sarama.Config, id string, s *sent, from [partitions]int) {
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.CommitInterval = 100 * time.Millisecond
	g, err := sarama.NewConsumerGroup([]string{*bootstrap}, id, c)
	if err != nil {
		fail("NewConsumerGroup: %v", err)
	}
	h := &groupHandler{done: make(chan struct{})}
	for p := 0; p < partitions; p++ {
		h.want += len(s.byPart[p]) - from[p]
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{*topic}, h); err != nil && ctx.Err() == nil {
				fail("group consume: %v", err)
			}
		}
	}()
	go func() {
		for e := range g.Errors() {
			fail("group error: %v", e)
		}
	}()
	select {
	case <-h.done:
	case <-time.After(60 * time.Second):
		fail("group %s: not every message after 60 s", id)
	}
	time.Sleep(300 * time.Millisecond) // anything extra would arrive now
	cancel()
	if err := g.Close(); err != nil {
		fail("group close: %v", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for p := 0; p < partitions; p++ {
		want := s.byPart[p][from[p]:]
		if len(h.got[p]) != len(want) {
			fail("group %s partition %d: %d messages, want %d", id, p, len(h.got[p]), len(want))
		}
		for i, m := range h.got[p] {
			if m.Offset != s.base[p]+int64(from[p]+i) || string(m.Value) != want[i] {
				fail("group %s partition %d: got offset %d %q, want %d %q", id, p, m.Offset, m.Value,
					s.base[p]+int64(from[p]+i), want[i])
			}
		}
	}
	logf("group %s read %d messages once, in order", id, h.want)
}

func adminCreate(c *sarama.Config) sarama.ClusterAdmin {
	a, err := sarama.NewClusterAdmin([]string{*bootstrap}, c)
	if err != nil {
		fail("NewClusterAdmin: %v", err)
	}
	if err := a.CreateTopic(*topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		fail("CreateTopic: %v", err)
	}
	if err := a.CreateTopic(*topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err == nil ||
		!strings.Contains(err.Error(), "already exists") {
		fail("CreateTopic again: %v, want 'already exists'", err)
	}
	md, err := a.DescribeTopics([]string{*topic})
	if err != nil || len(md) != 1 || md[0].Err != sarama.ErrNoError || len(md[0].Partitions) != partitions {
		fail("DescribeTopics: %v %+v", err, md)
	}
	logf("ClusterAdmin created and described '%s'", *topic)
	return a
}

func adminDelete(c *sarama.Config, a sarama.ClusterAdmin) {
	if err := a.DeleteTopic(*topic); err != nil {
		fail("DeleteTopic: %v", err)
	}
	if err := a.DeleteTopic(*topic); err != sarama.ErrUnknownTopicOrPartition {
		fail("DeleteTopic again: %v, want %v", err, sarama.ErrUnknownTopicOrPartition)
	}
	if !c.Version.IsAtLeast(sarama.V0_11_0_0) {
		logf("ClusterAdmin deleted '%s'", *topic) // ListTopics needs DescribeConfigs (0.11)
		a.Close()
		return
	}
	topics, err := a.ListTopics()
	if err != nil {
		fail("ListTopics: %v", err)
	}
	if _, ok := topics[*topic]; ok {
		fail("topic '%s' still listed after DeleteTopic", *topic)
	}
	names := make([]string, 0, len(topics))
	for n := range topics {
		names = append(names, n)
	}
	sort.Strings(names)
	logf("ClusterAdmin deleted '%s' (left: %v)", *topic, names)
	a.Close()
}

func main() {
	flag.Parse()
	sarama.Logger = log.New(&saramaLog, "sarama: ", log.Lmicroseconds)
	if *bootstrap == "" || *topic == "" {
		fail("usage: sarama-client -bootstrap host:port -topic t [-version v] [-codec c] [-group] [-admin]")
	}
	var a sarama.ClusterAdmin
	if *admin {
		a = adminCreate(config())
	}
	s := &sent{}
	produceSync(config(), s)
	if *wantErr != "" {
		return
	}
	produceAsync(config(), "async", s)
	if c := config(); c.Version.IsAtLeast(sarama.V0_11_0_0) {
		c.Producer.Idempotent = true
		c.Producer.RequiredAcks = sarama.WaitForAll
		c.Producer.Retry.Max = 3
		c.Net.MaxOpenRequests = 1
		produceAsync(c, "idempotent", s)
	}
	logf("produced %d messages", 3*(*count))
	client, err := sarama.NewClient([]string{*bootstrap}, config())
	if err != nil {
		fail("NewClient: %v", err)
	}
	checkOffsets(client, s)
	consumePartitions(client, s)
	commitOffsets(client, s)
	client.Close()
	if *group {
		id := "g-" + *topic
		consumeGroup(config(), id, s, [partitions]int{})
		// More data: the same group resumes from its committed offsets.
		var from [partitions]int
		for p := 0; p < partitions; p++ {
			from[p] = len(s.byPart[p])
		}
		produceAsync(config(), "more", s)
		consumeGroup(config(), id, s, from)
	}
	if a != nil {
		adminDelete(config(), a)
	}
	logf("ok")
}
