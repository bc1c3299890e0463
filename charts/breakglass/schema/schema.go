// Package schema writes the chart's values.schema.json from values.yaml:
// each value's type from its default, its description from the comment
// above it, and extra constraints from a "# @schema {json}" line in that
// comment. Objects refuse keys they do not know, so a misspelt value fails
// the install with a message naming it.
package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FromValues returns the JSON schema of a values.yaml.
func FromValues(values []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(values, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("values.yaml is not a mapping")
	}
	root, err := object(doc.Content[0], "")
	if err != nil {
		return nil, err
	}
	root["$schema"] = "https://json-schema.org/draft-07/schema#"
	root["title"] = "breakglass chart values"
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func object(n *yaml.Node, at string) (map[string]any, error) {
	props := map[string]any{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		s, err := node(val, key.HeadComment, at+"."+key.Value)
		if err != nil {
			return nil, err
		}
		props[key.Value] = s
	}
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}, nil
}

func node(n *yaml.Node, comment, at string) (map[string]any, error) {
	desc, hint, err := parseComment(comment, at)
	if err != nil {
		return nil, err
	}
	var s map[string]any
	switch {
	case n.Kind == yaml.MappingNode && hint["additionalProperties"] == true:
		s = map[string]any{"type": "object"}
	case n.Kind == yaml.MappingNode:
		if s, err = object(n, at); err != nil {
			return nil, err
		}
	case n.Kind == yaml.SequenceNode:
		s = map[string]any{"type": "array"}
		if len(n.Content) > 0 && hint["items"] == nil {
			item, err := node(n.Content[0], "", at+"[]")
			if err != nil {
				return nil, err
			}
			s["items"] = item
		}
	case n.Tag == "!!int":
		s = map[string]any{"type": "integer"}
	case n.Tag == "!!bool":
		s = map[string]any{"type": "boolean"}
	case n.Tag == "!!float":
		s = map[string]any{"type": "number"}
	default:
		s = map[string]any{"type": "string"}
	}
	if desc != "" {
		s["description"] = desc
	}
	for k, v := range hint {
		s[k] = v
	}
	return s, nil
}

// parseComment splits a head comment into its prose and its @schema hint.
func parseComment(comment, at string) (string, map[string]any, error) {
	var prose []string
	hint := map[string]any{}
	for _, line := range strings.Split(comment, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
		if h, ok := strings.CutPrefix(line, "@schema "); ok {
			if err := json.Unmarshal([]byte(h), &hint); err != nil {
				return "", nil, fmt.Errorf("values%s: the @schema comment is not JSON: %w", at, err)
			}
			continue
		}
		if line != "" {
			prose = append(prose, line)
		}
	}
	return strings.Join(prose, " "), hint, nil
}
