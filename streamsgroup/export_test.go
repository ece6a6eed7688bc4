package streamsgroup

// FromResponse is fromResponse for the tests of the conversion on a saved
// real answer.
var FromResponse = fromResponse
