// The fast lane's C functions (kotlin-swift/uniffi/src/fast.rs and fast_wait.rs), which
// libweida_uniffi exports beside UniFFI's: written by hand, as UniFFI does not generate them.
// Each declaration is that file's `extern "C"` signature; the Swift layer's FastLane.swift is
// their only caller. What each answers, and their safety rules: the Rust doc comments.
#pragma once
#include <stdint.h>

uint64_t weida_fast_lane(uint64_t handle, int32_t kind);
void weida_fast_lane_free(uint64_t lane);
int32_t weida_fast_take_ready(uint64_t lane, int32_t max, uint8_t *out, int32_t cap);

int32_t weida_fast_on_wake(void (*wake)(int64_t token));
int64_t weida_fast_wait_recv(uint64_t lane, int32_t max, int64_t token);
int64_t weida_fast_wait_request(uint64_t lane, const uint8_t *body, int32_t len, int64_t token);
int64_t weida_fast_wait_send_packed(uint64_t lane, const uint8_t *packed, int32_t len, int32_t count,
                                    int64_t token);
int64_t weida_fast_wait_accept(uint64_t lane, int64_t token);
int64_t weida_fast_wait_take_body(uint64_t exchange, int64_t token);
int64_t weida_fast_wait_reply(uint64_t exchange, const uint8_t *body, int32_t len, int64_t token);
int32_t weida_fast_wait_take(int64_t wait, uint8_t *out, int32_t cap);
void weida_fast_wait_free(int64_t wait);
