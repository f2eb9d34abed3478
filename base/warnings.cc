#include "base/warnings.h"

#include <utility>

#include "base/printable_text.h"

namespace ehprof {

void Warnings::AddKeyed(std::string key, std::string warning) {
  // Warnings name paths, comms and symbols a user chose: what reaches the
  // terminal or the log is one line with no escape sequence in it.
  if (!IsPrintableText(warning)) warning = PrintableText(warning);
  MutexLock lock(mu_);
  if (seen_.size() >= remember_) {
    ++dropped_;
    return;
  }
  if (seen_.insert(std::move(key)).second) pending_.push_back(std::move(warning));
}

void Warnings::Add(std::string warning) {
  std::string key = "w:" + warning;  // before the move below
  AddKeyed(std::move(key), std::move(warning));
}

void Warnings::AddOnce(std::string_view topic, std::string warning) {
  AddKeyed("t:" + std::string(topic), std::move(warning));
}

void Warnings::AddAll(std::vector<std::string> warnings) {
  for (std::string& w : warnings) Add(std::move(w));
}

std::vector<std::string> Warnings::Take() {
  MutexLock lock(mu_);
  return std::exchange(pending_, {});
}

uint64_t Warnings::TakeDropped() {
  MutexLock lock(mu_);
  return std::exchange(dropped_, 0);
}

}  // namespace ehprof
