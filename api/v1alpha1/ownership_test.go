package v1alpha1

import (
	"reflect"
	"strings"
	"testing"
)

// TestOwnershipNamesRealFields: every path the ownership lists name is a
// field of SessionStatus, so a renamed field cannot leave a rule guarding
// nothing (CEL's optional chains would accept a path that is not there).
func TestOwnershipNamesRealFields(t *testing.T) {
	for _, p := range append(append([]string{}, PortalOnlyStatus...), WrittenOnceStatus...) {
		if !hasJSONPath(reflect.TypeFor[SessionStatus](), strings.Split(p, ".")) {
			t.Errorf("status.%s is not a field of SessionStatus", p)
		}
	}
}

func hasJSONPath(typ reflect.Type, path []string) bool {
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
		typ = typ.Elem()
	}
	if len(path) == 0 {
		return true
	}
	if typ.Kind() != reflect.Struct {
		return false
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == path[0] {
			return hasJSONPath(f.Type, path[1:])
		}
	}
	return false
}
