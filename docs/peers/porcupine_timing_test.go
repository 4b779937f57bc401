// Side-by-side timing of Porcupine against harness: copied into a Porcupine
// checkout (package porcupine, beside porcupine_test.go, whose parsers and
// models it uses) by docs/peers/porcupine-bench.sh, then
//
//	go test -c -o porcupine.test
//	PEER_FILES=a.log,b.txt ./porcupine.test -test.run TestPeerTiming
//
// checks each file as Porcupine's own tests do: `*.log` (Jepsen etcd logs)
// with parseJepsenLog + etcdModel, `*.txt` (Porcupine's kv files) with
// parseKvLog + kvModel, and prints "file<TAB>verdict<TAB>seconds"
// (parsing included, as `harness check FILE` includes it).
package porcupine

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestPeerTiming(t *testing.T) {
	for _, f := range strings.Split(os.Getenv("PEER_FILES"), ",") {
		if f == "" {
			continue
		}
		start := time.Now()
		var ok bool
		if strings.HasSuffix(f, ".txt") {
			ok = CheckEvents(kvModel, parseKvLog(f))
		} else {
			ok = CheckEvents(etcdModel, parseJepsenLog(f))
		}
		fmt.Printf("%s\t%t\t%.3f\n", f, ok, time.Since(start).Seconds())
	}
}
