#pragma once

#include "core/common/diagnostic.h"

#include <cassert>
#include <utility>
#include <variant>

namespace waferscope::core {

// Either a value or the Diagnostic that explains why there is none. A small stand-in for
// C++23 std::expected, specialised for user-input errors.
template <typename T>
class Expected {
public:
    Expected(T value)
        : m_state(std::move(value))
    {
    }
    Expected(Diagnostic error)
        : m_state(std::move(error))
    {
    }

    bool hasValue() const { return std::holds_alternative<T>(m_state); }
    explicit operator bool() const { return hasValue(); }

    const T& value() const&
    {
        assert(hasValue());
        return std::get<T>(m_state);
    }
    T&& value() &&
    {
        assert(hasValue());
        return std::get<T>(std::move(m_state));
    }
    const T& operator*() const& { return value(); }
    const T* operator->() const { return &value(); }

    const Diagnostic& error() const
    {
        assert(!hasValue());
        return std::get<Diagnostic>(m_state);
    }

private:
    std::variant<T, Diagnostic> m_state;
};

} // namespace waferscope::core
