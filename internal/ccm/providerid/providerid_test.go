package providerid

import "testing"

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, region, id string
		ok             bool
	}{
		{"cn-hangzhou.i-bp1abc", "cn-hangzhou", "i-bp1abc", true},
		{"alicloud://cn-beijing.i-2ze0", "cn-beijing", "i-2ze0", true},
		{" cn-hangzhou.i-x ", "cn-hangzhou", "i-x", true},
		// Segmented forms: only the last segment names the instance.
		{"alicloud:///cn-hangzhou.i-bp1abc", "cn-hangzhou", "i-bp1abc", true},
		{"alicloud://cn-hangzhou-h/cn-hangzhou.i-bp1abc", "cn-hangzhou", "i-bp1abc", true},
		{"alibabacloud://1234567890/c-abc/cn-shanghai.i-uf6x", "cn-shanghai", "i-uf6x", true},
		{"", "", "", false},
		{"i-bp1abc", "", "", false},
		{"cn-hangzhou.vm-1", "", "", false},
		{"cn-hangzhou.i-", "", "", false},
		{"aws:///us-east-1a/i-0abc", "", "", false},
		{"cn-hangzhou.i-a.b", "", "", false},
		{"://cn-hangzhou.i-a", "", "", false},
		{"alicloud://cn-hangzhou.i-a/", "", "", false},
		{"alicloud://", "", "", false},
		{"ack-hybrid://cn-hangzhou.i-a", "", "", false},
		{"cn/hangzhou.i-a", "", "", false},
	} {
		r, id, err := Parse(tc.in)
		if (err == nil) != tc.ok || r != tc.region || id != tc.id {
			t.Errorf("Parse(%q) = %q, %q, %v; want %q, %q, ok=%v", tc.in, r, id, err, tc.region, tc.id, tc.ok)
		}
		if tc.ok && Format(r, id) != Format(tc.region, tc.id) {
			t.Errorf("round trip of %q", tc.in)
		}
	}
}
