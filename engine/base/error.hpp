// Typed errors the engine raises. InputError is bad user input (exit code 2);
// PeerFailure and Timeout come from a Runtime and drive recovery.
#pragma once

#include <stdexcept>
#include <string>

namespace engine {

// Bad input, refused before anything runs: which file, where in it, and why.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string json_path, std::string reason);
  const std::string& file() const { return file_; }
  const std::string& json_path() const { return json_path_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string file_, json_path_, reason_;
};

// A peer is gone: EOF, reset, failed completion or a dead simulated link/host.
class PeerFailure : public std::runtime_error {
 public:
  // `reporter`: the rank that saw it, when not the node raising it.
  PeerFailure(int peer, const std::string& why, int reporter = -1);
  int peer() const { return peer_; }
  int reporter() const { return reporter_; }

 private:
  int peer_, reporter_;
};

// A bounded wait ran out before the expected message arrived.
class Timeout : public std::runtime_error {
 public:
  Timeout(int peer, int tag, double waited_s);
  int peer() const { return peer_; }

 private:
  int peer_;
};

}  // namespace engine
