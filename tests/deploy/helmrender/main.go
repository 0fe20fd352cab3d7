// helmrender renders a Helm chart the way `helm template` does, with Go's
// text/template, Sprig (Helm's function library, Debian's
// golang-github-masterminds-sprig-dev) and Helm's own template functions
// (include, tpl, required, toYaml, fromYaml, toJson, fromJson, lookup), so
// that the chart tests check what `helm install` would apply. Helm itself
// is not packaged for Debian 12.
//
// usage: helmrender CHART_DIR RELEASE NAMESPACE [VALUES_FILE...]
// ($HELMRENDER_KUBE_VERSION: the cluster's version, helm template
// --kube-version; default v1.30.0; checked against Chart.yaml's kubeVersion)
//
// Values: the chart's values.yaml, then each VALUES_FILE (YAML or JSON) merged
// over it as Helm coalesces them (maps merge key by key, a null deletes the
// key, anything else replaces). Output, on stdout: a JSON object mapping
// "<chart>/templates/<file>" to its rendered text, for every template not
// starting with "_" (NOTES.txt included). A template error is printed on
// stderr and the exit status is 1.
//
// Helm behaviour kept: missing keys render as "" (missingkey=zero, then
// "<no value>" removed), numbers from YAML are float64 (as Helm's
// sigs.k8s.io/yaml decoding gives them), toYaml drops the final newline,
// "env" and "expandenv" are not available, lookup returns an empty map (as
// under `helm template`), .Files.Get reads the chart's other files.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/semver"
	"github.com/Masterminds/sprig"
	"gopkg.in/yaml.v2"
)

// jsonish turns what yaml.v2 decodes into what Helm's sigs.k8s.io/yaml
// decoding gives: map[string]interface{}, []interface{}, float64 numbers.
func jsonish(v interface{}) (interface{}, error) {
	b, err := json.Marshal(toStringKeys(v))
	if err != nil {
		return nil, err
	}
	var out interface{}
	err = json.Unmarshal(b, &out)
	return out, err
}

func toStringKeys(v interface{}) interface{} {
	switch t := v.(type) {
	case map[interface{}]interface{}:
		m := make(map[string]interface{}, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = toStringKeys(e)
		}
		return m
	case []interface{}:
		l := make([]interface{}, len(t))
		for i, e := range t {
			l[i] = toStringKeys(e)
		}
		return l
	}
	return v
}

func readYAML(path string) (map[string]interface{}, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw interface{}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	v, err := jsonish(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if v == nil {
		return map[string]interface{}{}, nil
	}
	m, ok := v.(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("%s: not a map of values", path)
	}
	return m, nil
}

// coalesce merges src over dst as Helm does for user values.
func coalesce(dst, src map[string]interface{}) {
	for k, sv := range src {
		if sv == nil {
			delete(dst, k)
			continue
		}
		sm, sok := sv.(map[string]interface{})
		dm, dok := dst[k].(map[string]interface{})
		if sok && dok {
			coalesce(dm, sm)
		} else {
			dst[k] = sv
		}
	}
}

func toYAML(v interface{}) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	var obj interface{}
	if err := yaml.Unmarshal(b, &obj); err != nil {
		return ""
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(out), "\n")
}

func fromYAML(s string) map[string]interface{} {
	m := map[string]interface{}{}
	var raw interface{}
	if err := yaml.Unmarshal([]byte(s), &raw); err != nil {
		m["Error"] = err.Error()
		return m
	}
	if v, err := jsonish(raw); err == nil {
		if vm, ok := v.(map[string]interface{}); ok {
			return vm
		}
	}
	return m
}

func toJSON(v interface{}) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

func fromJSON(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

// chartFiles is .Files: every file of the chart outside templates/ and
// charts/, and other than Chart.yaml and values.yaml, by its path in the
// chart (Helm skips what .helmignore lists; this chart has none).
type chartFiles map[string][]byte

// Get is the file's text, "" for a file the chart does not have.
func (f chartFiles) Get(name string) string { return string(f[name]) }

// GetBytes is the file's content, nil for a file the chart does not have.
func (f chartFiles) GetBytes(name string) []byte { return f[name] }

func readChartFiles(dir string) (chartFiles, error) {
	files := chartFiles{}
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if info.IsDir() {
			if rel == "templates" || rel == "charts" {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == "Chart.yaml" || rel == "values.yaml" || rel == ".helmignore" {
			return nil
		}
		data, err := os.ReadFile(path)
		files[rel] = data
		return err
	})
	return files, err
}

// chartMeta maps Chart.yaml's keys to Helm's .Chart field names.
func chartMeta(dir string) (map[string]interface{}, string, error) {
	raw, err := readYAML(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, "", err
	}
	meta := map[string]interface{}{}
	for k, v := range raw {
		meta[strings.ToUpper(k[:1])+k[1:]] = v
	}
	name, _ := raw["name"].(string)
	if name == "" {
		return nil, "", fmt.Errorf("%s/Chart.yaml: no name", dir)
	}
	return meta, name, nil
}

func render(dir, release, namespace string, valueFiles []string) (map[string]string, error) {
	meta, chart, err := chartMeta(dir)
	if err != nil {
		return nil, err
	}
	values, err := readYAML(filepath.Join(dir, "values.yaml"))
	if err != nil {
		return nil, err
	}
	for _, f := range valueFiles {
		user, err := readYAML(f)
		if err != nil {
			return nil, err
		}
		coalesce(values, user)
	}
	chartFiles, err := readChartFiles(dir)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "templates", "*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)

	t := template.New("gotpl").Option("missingkey=zero")
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	includeDepth := 0
	funcs["include"] = func(name string, data interface{}) (string, error) {
		if includeDepth > 1000 {
			return "", fmt.Errorf("rendering template has a nested reference name: %s", name)
		}
		includeDepth++
		defer func() { includeDepth-- }()
		var buf bytes.Buffer
		err := t.ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		c, err := t.Clone()
		if err != nil {
			return "", err
		}
		c, err = c.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		err = c.Execute(&buf, data)
		return strings.ReplaceAll(buf.String(), "<no value>", ""), err
	}
	funcs["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return v, fmt.Errorf("%s", msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return v, fmt.Errorf("%s", msg)
		}
		return v, nil
	}
	funcs["toYaml"] = toYAML
	funcs["fromYaml"] = fromYAML
	funcs["toJson"] = toJSON
	funcs["fromJson"] = fromJSON
	funcs["lookup"] = func(string, string, string, string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	t.Funcs(funcs)

	var names []string
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		name := chart + "/templates/" + filepath.Base(f)
		if _, err := t.New(name).Parse(string(text)); err != nil {
			return nil, err
		}
		if !strings.HasPrefix(filepath.Base(f), "_") {
			names = append(names, name)
		}
	}
	kube, err := kubeVersion(meta)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, name := range names {
		data := map[string]interface{}{
			"Values": values,
			"Chart":  meta,
			"Release": map[string]interface{}{
				"Name": release, "Namespace": namespace, "Service": "Helm",
				"IsInstall": true, "IsUpgrade": false, "Revision": 1,
			},
			"Capabilities": map[string]interface{}{
				"KubeVersion": kube,
				"APIVersions": []string{},
			},
			"Template": map[string]interface{}{"Name": name, "BasePath": chart + "/templates"},
			"Files":    chartFiles,
		}
		var buf bytes.Buffer
		if err := t.ExecuteTemplate(&buf, name, data); err != nil {
			return nil, err
		}
		out[name] = strings.ReplaceAll(buf.String(), "<no value>", "")
	}
	return out, nil
}

// kubeVersion is .Capabilities.KubeVersion for $HELMRENDER_KUBE_VERSION
// (helm template --kube-version; default v1.30.0), refused as Helm refuses it
// when the chart's kubeVersion constraint excludes it.
func kubeVersion(meta map[string]interface{}) (map[string]interface{}, error) {
	text := os.Getenv("HELMRENDER_KUBE_VERSION")
	if text == "" {
		text = "v1.30.0"
	}
	v, err := semver.NewVersion(text)
	if err != nil {
		return nil, fmt.Errorf("HELMRENDER_KUBE_VERSION %q: %v", text, err)
	}
	if c, ok := meta["KubeVersion"].(string); ok && c != "" {
		cs, err := semver.NewConstraint(c)
		if err != nil {
			return nil, fmt.Errorf("Chart.yaml kubeVersion %q: %v", c, err)
		}
		if !cs.Check(v) {
			return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes v%s", c, v)
		}
	}
	return map[string]interface{}{
		"Version": "v" + v.String(), "Major": fmt.Sprint(v.Major()), "Minor": fmt.Sprint(v.Minor()),
		"GitVersion": "v" + v.String(),
	}, nil
}

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: helmrender CHART_DIR RELEASE NAMESPACE [VALUES_FILE...]")
		os.Exit(2)
	}
	out, err := render(os.Args[1], os.Args[2], os.Args[3], os.Args[4:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	b, _ := json.Marshal(out)
	os.Stdout.Write(b)
}
