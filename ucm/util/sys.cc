#include "sys.h"

#include <ucm/api/ucm.h>
#include <ucm/util/log.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <strings.h>
#include <sys/auxv.h>
#include <sys/shm.h>
#include <unistd.h>

namespace ucm::sys {

size_t page_size()
{
    static size_t cached = 0;
    size_t value         = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (value == 0) {
        value = getauxval(AT_PAGESZ);
        if (value == 0) {
            value = 4096;
        }
        __atomic_store_n(&cached, value, __ATOMIC_RELAXED);
    }
    return value;
}

bool env_allows_events()
{
    const char *value = getenv("UCX_MEM_EVENTS");
    if (value == nullptr) {
        return true;
    }

    static const char *const no_words[] = {"n", "no", "off", "0", "false"};
    for (const char *word : no_words) {
        if (strcasecmp(value, word) == 0) {
            return false;
        }
    }
    static const char *const yes_words[] = {"y", "yes", "on", "1", "true", ""};
    for (const char *word : yes_words) {
        if (strcasecmp(value, word) == 0) {
            return true;
        }
    }
    ucm_warn("invalid value UCX_MEM_EVENTS=%s, memory events stay enabled", value);
    return true;
}

ucm_mmap_hook_mode_t env_hook_mode(ucm_mmap_hook_mode_t fallback)
{
    const char *value = getenv("UCX_MEM_MMAP_HOOK_MODE");
    if (value == nullptr) {
        return fallback;
    }
    static const struct {
        const char *name;
        ucm_mmap_hook_mode_t mode;
    } modes[] = {{"none", UCM_MMAP_HOOK_NONE},
                 {"reloc", UCM_MMAP_HOOK_RELOC},
                 {"bistro", UCM_MMAP_HOOK_BISTRO}};
    for (const auto &entry : modes) {
        if (strcasecmp(value, entry.name) == 0) {
            return entry.mode;
        }
    }
    ucm_warn("invalid value UCX_MEM_MMAP_HOOK_MODE=%s (none, reloc or bistro): using the default",
             value);
    return fallback;
}

bool events_enabled()
{
    return ucm_global_opts.enable_events && env_allows_events();
}

namespace {

/* Reads a text file line by line into a fixed buffer (no heap). */
class line_reader {
public:
    explicit line_reader(const char *path)
    {
        do {
            m_fd = open(path, O_RDONLY | O_CLOEXEC);
        } while ((m_fd < 0) && (errno == EINTR));
    }

    ~line_reader()
    {
        if (m_fd >= 0) {
            close(m_fd);
        }
    }

    line_reader(const line_reader &)            = delete;
    line_reader &operator=(const line_reader &) = delete;

    bool ok() const { return m_fd >= 0; }

    /* Next line without its newline; nullptr at end of file. Lines longer
     * than the buffer are cut (the fields we parse come first). */
    const char *next()
    {
        for (;;) {
            char *newline = static_cast<char *>(memchr(m_buf + m_start, '\n', m_end - m_start));
            if (newline != nullptr) {
                *newline         = '\0';
                const char *line = m_buf + m_start;
                m_start          = newline - m_buf + 1;
                return line;
            }

            /* Move the partial line to the front and read more. */
            size_t partial = m_end - m_start;
            memmove(m_buf, m_buf + m_start, partial);
            m_start = 0;
            m_end   = partial;
            if (m_end == sizeof(m_buf) - 1) {
                m_buf[m_end] = '\0'; /* overlong line: hand out a cut */
                m_end        = 0;
                return m_buf;
            }

            ssize_t nread = read(m_fd, m_buf + m_end, sizeof(m_buf) - 1 - m_end);
            if ((nread < 0) && (errno == EINTR)) {
                continue;
            }
            if (nread <= 0) {
                if (m_end == 0) {
                    return nullptr;
                }
                m_buf[m_end] = '\0'; /* last line without newline */
                m_end        = 0;
                return m_buf;
            }
            m_end += static_cast<size_t>(nread);
        }
    }

private:
    int m_fd       = -1;
    size_t m_start = 0;
    size_t m_end   = 0;
    char m_buf[1024];
};

struct maps_entry {
    uintptr_t start;
    uintptr_t end;
    unsigned long long inode;
    char device[16];
};

/* "start-end perms offset dev inode path" */
bool parse_maps_line(const char *line, maps_entry *entry)
{
    char *cursor;
    entry->start = strtoull(line, &cursor, 16);
    if (*cursor != '-') {
        return false;
    }
    entry->end = strtoull(cursor + 1, &cursor, 16);

    /* Skip the perms and offset fields, copy dev, read the inode. */
    for (int field = 0; field < 2; ++field) {
        while (*cursor == ' ')
            ++cursor;
        while ((*cursor != ' ') && (*cursor != '\0'))
            ++cursor;
    }
    while (*cursor == ' ')
        ++cursor;
    size_t length = strcspn(cursor, " ");
    if ((length == 0) || (length >= sizeof(entry->device))) {
        return false;
    }
    memcpy(entry->device, cursor, length);
    entry->device[length] = '\0';
    entry->inode          = strtoull(cursor + length, nullptr, 10);
    return true;
}

} // namespace

size_t mapping_size(const void *addr)
{
    line_reader maps("/proc/self/maps");
    if (!maps.ok()) {
        return 0;
    }

    const uintptr_t target = reinterpret_cast<uintptr_t>(addr);
    maps_entry first{};
    bool found  = false;
    size_t size = 0;
    while (const char *line = maps.next()) {
        maps_entry entry{};
        if (!parse_maps_line(line, &entry)) {
            continue;
        }
        if (!found) {
            if (entry.start == target) {
                first = entry;
                found = true;
                size  = entry.end - entry.start;
            }
        } else if ((entry.start == first.start + size) && (entry.inode == first.inode) &&
                   (strcmp(entry.device, first.device) == 0)) {
            /* Same object split by mprotect or by the kernel. */
            size += entry.end - entry.start;
        } else {
            break;
        }
    }
    return size;
}

size_t shm_segment_size(int shmid)
{
    struct shmid_ds info;
    if (shmctl(shmid, IPC_STAT, &info) != 0) {
        return 0;
    }
    return info.shm_segsz;
}

} // namespace ucm::sys
