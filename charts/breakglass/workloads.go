package chart

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	appsv1 "k8s.io/api/apps/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Deployments are the Deployments in a rendered manifest (documents
// separated by ---), in order: what the tests hold the chart's pods to.
func Deployments(manifest []byte) ([]appsv1.Deployment, error) {
	dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	var out []appsv1.Deployment
	for {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if !bytes.Contains(doc, []byte("kind: Deployment")) {
			continue
		}
		var d appsv1.Deployment
		if err := yaml.Unmarshal(doc, &d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
}
