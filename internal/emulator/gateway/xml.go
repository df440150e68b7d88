package gateway

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// Answer formats. The RPC APIs answer XML when a V1 call names no Format
// (the API reference's common parameter Format: "JSON or XML, default
// XML"); the legacy Go SDK always sends Format=JSON (its AcceptFormat, which
// XML switches to xml.Unmarshal into the same models), darabonba's V1 mode
// sends json, and V3 calls carry no Format but accept: application/json.
const (
	formatJSON = "JSON"
	formatXML  = "XML"
)

// answerFormat picks the format of the answer to a call.
func answerFormat(r *http.Request, in *incoming) (string, error) {
	if in == nil {
		return formatJSON, nil
	}
	if f, ok := in.params.Get("Format"); ok && f != "" {
		switch strings.ToUpper(f) {
		case formatJSON:
			return formatJSON, nil
		case formatXML:
			return formatXML, nil
		}
		return formatJSON, api.InvalidParameter("Format", "The specified Format %q is not valid: JSON or XML.", f)
	}
	if strings.HasPrefix(r.Header.Get("Authorization"), "ACS3-") {
		if accept := strings.ToLower(r.Header.Get("Accept")); strings.Contains(accept, "xml") && !strings.Contains(accept, "json") {
			return formatXML, nil
		}
		return formatJSON, nil
	}
	return formatXML, nil
}

// writeXML renders body (any JSON-encodable value) as the RPC APIs' XML:
// one element per member, an array as its member's element repeated (so
// {"LoadBalancers":{"LoadBalancer":[a,b]}} becomes
// <LoadBalancers><LoadBalancer>a</LoadBalancer><LoadBalancer>b</LoadBalancer></LoadBalancers>),
// members in name order, under the root element root.
func writeXML(w http.ResponseWriter, status int, root string, body any) {
	data, err := toXML(root, body)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"Code": "InternalError", "Message": "encode response"})
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

func toXML(root string, body any) ([]byte, error) {
	// Through JSON, so typed answers render by their json names as they do
	// in the JSON answer.
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	if err := xmlElement(&b, root, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func xmlElement(b *bytes.Buffer, name string, v any) error {
	if arr, ok := v.([]any); ok {
		for _, it := range arr {
			if err := xmlElement(b, name, it); err != nil {
				return err
			}
		}
		return nil
	}
	if v == nil {
		return nil
	}
	b.WriteString("<" + name + ">")
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := xmlElement(b, k, x[k]); err != nil {
				return err
			}
		}
	case string:
		if err := xml.EscapeText(b, []byte(x)); err != nil {
			return err
		}
	case json.Number:
		b.WriteString(x.String())
	case bool:
		fmt.Fprint(b, x)
	default:
		return fmt.Errorf("xml: unexpected %T", v)
	}
	b.WriteString("</" + name + ">")
	return nil
}
