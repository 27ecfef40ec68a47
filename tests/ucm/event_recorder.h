/*
 * Test helper: a handler that copies every event it receives (from the
 * registering thread only) into a fixed array. Handlers must not allocate,
 * hence no std::vector.
 */
#ifndef UCM_TEST_EVENT_RECORDER_H_
#define UCM_TEST_EVENT_RECORDER_H_

#include <ucm/api/ucm.h>

#include <atomic>
#include <cstddef>
#include <pthread.h>

namespace ucm_test {

class event_recorder {
public:
    static constexpr size_t capacity = 256;

    struct entry {
        ucm_event_type_t type;
        ucm_event_t event;
    };

    event_recorder() : m_thread(pthread_self()) {}

    ~event_recorder()
    {
        if (m_events != 0) {
            detach();
        }
    }

    event_recorder(const event_recorder &)            = delete;
    event_recorder &operator=(const event_recorder &) = delete;

    ucs_status_t attach(int events, int priority = 0)
    {
        ucs_status_t status = ucm_set_event_handler(events, priority, callback, this);
        if (status == UCS_OK) {
            m_events = events;
        }
        return status;
    }

    void detach() { detach_events(m_events); }

    /* Stop receiving some of the events. */
    void detach_events(int events)
    {
        ucm_unset_event_handler(events, callback, this);
        m_events &= ~events;
    }

    static ucm_event_callback_t callback_function() { return callback; }

    void clear() { m_count.store(0); }

    size_t size() const
    {
        size_t count = m_count.load();
        return (count < capacity) ? count : capacity;
    }

    const entry &at(size_t index) const { return m_entries[index]; }

    /* Number of recorded events of this type for which pred(event) holds. */
    template <typename Pred>
    size_t count(ucm_event_type_t type, Pred pred) const
    {
        size_t matches = 0;
        for (size_t i = 0; i < size(); ++i) {
            if ((m_entries[i].type == type) && pred(m_entries[i].event)) {
                ++matches;
            }
        }
        return matches;
    }

    size_t count(ucm_event_type_t type) const
    {
        return count(type, [](const ucm_event_t &) { return true; });
    }

    size_t count_unmapped(const void *address, size_t length) const
    {
        return count(UCM_EVENT_VM_UNMAPPED, [&](const ucm_event_t &e) {
            return (e.vm_unmapped.address == address) && (e.vm_unmapped.size == length);
        });
    }

    size_t count_mapped(const void *address, size_t length) const
    {
        return count(UCM_EVENT_VM_MAPPED, [&](const ucm_event_t &e) {
            return (e.vm_mapped.address == address) && (e.vm_mapped.size == length);
        });
    }

    size_t count_munmap(const void *address, size_t length) const
    {
        return count(UCM_EVENT_MUNMAP, [&](const ucm_event_t &e) {
            return (e.munmap.address == address) && (e.munmap.size == length);
        });
    }

private:
    static void callback(ucm_event_type_t type, ucm_event_t *event, void *arg)
    {
        auto *self = static_cast<event_recorder *>(arg);
        if (!pthread_equal(self->m_thread, pthread_self())) {
            return;
        }
        size_t index = self->m_count.fetch_add(1);
        if (index < capacity) {
            self->m_entries[index] = {type, *event};
        }
    }

    pthread_t m_thread;
    int m_events = 0;
    std::atomic<size_t> m_count{0};
    entry m_entries[capacity];
};

/* Anonymous read-write mapping made without events, freed on scope exit
 * (unless already gone). */
class scratch_mapping {
public:
    explicit scratch_mapping(size_t length);
    ~scratch_mapping();

    scratch_mapping(const scratch_mapping &)            = delete;
    scratch_mapping &operator=(const scratch_mapping &) = delete;

    char *get() const { return m_address; }
    size_t length() const { return m_length; }
    /* The caller unmapped it (or remapped it away). */
    void forget() { m_address = nullptr; }

private:
    char *m_address;
    size_t m_length;
};

size_t page_size();

/* Whether [address, address + length) is mapped at all. */
bool is_mapped(const void *address, size_t length);

} // namespace ucm_test

#endif
