package gateway

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// maxMessageBytes bounds an error message the emulator returns for a
// parameter: a request can carry megabytes, the answer must not echo them.
const maxMessageBytes = 1024

// decoded is everything the products read from the parameters, for one
// parameter name found in the request.
type decoded struct {
	Get     string
	Found   bool
	List    []string
	Objects []api.Params
	Object  api.Params
	Int     string
	Bool    string
	Page    string
	Token   string
}

func decode(p api.Params, key string) decoded {
	name, _, _ := strings.Cut(key, ".")
	d := decoded{List: p.List(name), Objects: p.Objects(name), Object: p.Object(name)}
	d.Get, d.Found = p.Get(strings.ToUpper(key))
	n, err := p.Int(key, -1)
	d.Int = fmt.Sprint(n, err)
	b, err := p.Bool(key, false)
	d.Bool = fmt.Sprint(b, err)
	num, size, start, end, err := p.Page(1000, 10, 100)
	d.Page = fmt.Sprint(num, size, start, end, err)
	max, start, end, next, err := p.Cursor(fuzzKeys, 10, 100, "")
	d.Token = fmt.Sprint(max, start, end, next, err)
	return d
}

// fuzzKeys are the sort keys of a listing of 1000 items, for Cursor.
var fuzzKeys = func() []string {
	out := make([]string, 1000)
	for i := range out {
		out[i] = api.SeqKey(int64(i + 1))
	}
	return out
}()

func messageOf(err error) string {
	if e, ok := err.(*api.Error); ok {
		return e.Message
	}
	return err.Error()
}

// FuzzDecodeParams sends an arbitrary query and body through the
// gateway's decoding and the parameter helpers every product uses: no
// panic, error messages bounded, paging bounds inside the list, and the
// same request always decoding to the same values (parameters that differ
// only in case or in index spelling, Tag.1 and tag.01, included).
func FuzzDecodeParams(f *testing.F) {
	for _, s := range [][3]string{
		{"Action=DescribeInstances&InstanceIds=%5B%22i-1%22%5D&PageSize=10&PageNumber=2", "", ""},
		{"Tag.1.Key=a&Tag.1.Value=b&tag.1.key=c&Tag.01.Key=d", "", ""},
		{"", "RouteEntries.1.DstCidrBlock=10.0.0.0/24&RouteEntries.1.NextHop=i-1&routeentries.1.dstcidrblock=x", "application/x-www-form-urlencoded"},
		{"PageNumber=9223372036854775807&PageSize=100", "", ""},
		{"MaxResults=100&NextToken=99999999999999999999", "", ""},
		{"InstanceIds.1=i-1&InstanceIds.01=i-2&instanceids.1=i-3", "", ""},
		{"a=%zz", "", ""},
		{"", "b=%zz", ""},
		{"Bool=TRUE&bool=false&Int=12&INT=13", "", ""},
		{"x=1", "{\"json\":true}", "application/json"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, query, body, contentType string) {
		watchdog := time.AfterFunc(5*time.Second, func() { panic(fmt.Sprintf("decoding took over 5s on %q %q", query, body)) })
		defer watchdog.Stop()
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.URL.RawQuery = query
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		in, err := readIncoming(r)
		if err != nil {
			if n := len(messageOf(err)); n > maxMessageBytes {
				t.Fatalf("error message of %d bytes: %.200s…", n, messageOf(err))
			}
			return
		}
		keys := make([]string, 0, len(in.params))
		for k := range in.params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if len(keys) > 8 {
			keys = keys[:8]
		}
		for _, k := range keys {
			first := decode(in.params, k)
			// Map order is random per iteration: a decoding that depends
			// on it shows within a few tries.
			for i := 0; i < 4; i++ {
				if again := decode(in.params, k); !reflect.DeepEqual(first, again) {
					t.Fatalf("decoding %q is not deterministic:\n%+v\n%+v", k, first, again)
				}
			}
			for _, e := range []string{first.Int, first.Bool, first.Page, first.Token} {
				if len(e) > maxMessageBytes+64 {
					t.Fatalf("error message of %d bytes: %.200s…", len(e), e)
				}
			}
		}
		_, _, start, end, err := in.params.Page(1000, 10, 100)
		if err == nil && (start < 0 || end < start || end > 1000) {
			t.Fatalf("Page bounds [%d:%d] outside a list of 1000", start, end)
		}
		_, start, end, _, err = in.params.Cursor(fuzzKeys, 10, 100, "")
		if err == nil && (start < 0 || end < start || end > 1000) {
			t.Fatalf("Cursor bounds [%d:%d] outside a list of 1000", start, end)
		}
	})
}
