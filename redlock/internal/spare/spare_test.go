package spare

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A List gives back what was put, the last first, and keeps at most Max.
func TestListKeepsAtMostMax(t *testing.T) {
	var l List[int]
	assert.Nil(t, l.Take(), "an empty List")
	values := make([]int, Max+1)
	for i := range values {
		l.Put(&values[i])
	}
	assert.Len(t, l.Kept(), Max)
	assert.Same(t, &values[Max-1], l.Take(), "the last value kept comes first; the one past Max was not kept")
	for range Max - 1 {
		assert.NotNil(t, l.Take())
	}
	assert.Nil(t, l.Take(), "Max values were kept, no more")
}
