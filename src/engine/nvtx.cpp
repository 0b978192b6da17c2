#include "mtc/nvtx.h"

#include <pthread.h>
#include <unistd.h>

#include <string>

namespace mtc::nvtx {

void name_current_thread(char const* name) {
  // Linux limits thread names to 15 characters plus the terminator.
  const std::string short_name = std::string(name).substr(0, 15);
  pthread_setname_np(pthread_self(), short_name.c_str());
#ifndef MTC_NVTX_DISABLE
  nvtxNameOsThreadA(static_cast<uint32_t>(gettid()), name);
#endif
}

}  // namespace mtc::nvtx
